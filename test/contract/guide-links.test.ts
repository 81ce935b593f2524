import fs from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { CONTRACT_GUIDES_BASE } from '../../src/http/docs-routes';
import { buildTestApp, type App } from '../support/app';

/**
 * The reference page links each tag (and the document) to its integrators' guide through
 * `externalDocs`: `http://localhost:8080/api/docs/guides/<file>.md` (`make run`; the page served
 * by an instance points them at itself) for a file of docs/integrators/. Every tag has one,
 * every link names a guide that exists, and the service answers its path with the guide's
 * text; a name that is no guide is an unknown path.
 */
type Json = Record<string, unknown>;
const ROOT = path.resolve(__dirname, '../..');
const contract = JSON.parse(fs.readFileSync(path.join(ROOT, 'generated/openapi.bundled.json'), 'utf8')) as Json;
const GUIDE_LINK = new RegExp(`^${CONTRACT_GUIDES_BASE.replaceAll('.', '\\.')}([a-z0-9-]+\\.md)$`);

const tags = (contract.tags ?? []) as Json[];
const links = [
  { where: 'the document', url: (contract.externalDocs as Json | undefined)?.url },
  ...tags.map((tag) => ({ where: `tag ${String(tag.name)}`, url: (tag.externalDocs as Json | undefined)?.url })),
];

describe('links from the reference page to the guides', () => {
  let app: App;
  beforeAll(async () => {
    app = await buildTestApp();
  });

  it('every tag used by an operation is declared, and the document and every tag link to a guide of docs/integrators/', () => {
    const used = new Set<string>();
    for (const item of Object.values(contract.paths as Record<string, Json>)) {
      for (const operation of Object.values(item) as Json[]) for (const tag of (operation?.tags ?? []) as string[]) used.add(tag);
    }
    expect([...used].filter((tag) => !tags.some((declared) => declared.name === tag))).toEqual([]);
    const broken = links.filter(({ url }) => {
      const name = typeof url === 'string' ? GUIDE_LINK.exec(url)?.[1] : undefined;
      return !name || !fs.existsSync(path.join(ROOT, 'docs/integrators', name));
    });
    expect(broken, `each externalDocs.url is ${CONTRACT_GUIDES_BASE}<a file of docs/integrators/>`).toEqual([]);
  });

  it('the service answers every link with the guide, as text', async () => {
    for (const url of new Set(links.map((link) => link.url as string))) {
      const res = await request(app).get(new URL(url).pathname);
      expect(res.status, url).toBe(200);
      expect(res.headers['content-type'], url).toMatch(/^text\/plain; charset=utf-8/);
      expect(res.text, url).toBe(fs.readFileSync(path.join(ROOT, 'docs/integrators', GUIDE_LINK.exec(url)?.[1] as string), 'utf8'));
    }
  });

  it('a name that is no guide is an unknown path: 404 NotFound', async () => {
    for (const url of ['/api/docs/guides/nope.md', '/api/docs/guides/..%2F..%2FREADME.md', '/api/docs/guides/%2e%2e%2fREADME.md', '/api/docs/guides/quickstart']) {
      const res = await request(app).get(url);
      expect(res.status, url).toBe(404);
      expect(res.body.error, url).toBe('NotFound');
    }
  });
});
