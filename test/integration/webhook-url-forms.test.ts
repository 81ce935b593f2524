import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { WebhookService, type LookupAll } from '../../src/modules/events';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { bearer, businessPath, createOrganization, memberToken } from '../support/factories';

/**
 * The SSRF guard with private targets refused (production settings): every textual form of a
 * private, loopback, link-local or otherwise non-public address is refused when an endpoint is
 * created (as a literal in the URL, and as what its host name resolves to) and again when a
 * delivery is attempted (a literal saved earlier, and a name that resolves differently since).
 */
const IPV4_IN_IPV6 = [
  ['[::127.0.0.1]', 'IPv4-compatible loopback'],
  ['[::ffff:0:127.0.0.1]', 'IPv4-translated loopback'],
] as const;

const OTHER_FORMS = [
  '127.0.0.1', '127.1', '0177.0.0.1', '0x7f.0.0.1', '2130706433', '0x7f000001', '10.0.0.1', '172.16.5.4', '192.168.0.1',
  '169.254.169.254', '100.64.0.1', '0.0.0.0', '192.0.0.170', '198.18.0.1', '203.0.113.9', '224.0.0.1', '255.255.255.255',
  '[::1]', '[::]', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[::ffff:169.254.169.254]', '[::ffff:0:7f00:1]', '[0:0:0:0:0:ffff:127.0.0.1]',
  '[::10.0.0.1]', '[::0.0.0.1]', '[64:ff9b::127.0.0.1]', '[64:ff9b::a9fe:a9fe]', '[64:ff9b:1::808:808]', '[2002:7f00:1::1]',
  '[2001:0:4136:e378:8000:63bf:3fff:fdd2]', '[fc00::1]', '[fd12:3456::1]', '[fe80::1]', '[fec0::1]', '[ff02::1]', '[100::1]', '[2001:db8::1]',
];

const FORMS = [...IPV4_IN_IPV6.map(([host]) => host), ...OTHER_FORMS];
const PUBLIC_FORMS = ['8.8.8.8', '[2606:4700:4700::1111]', '[::ffff:8.8.8.8]', '[64:ff9b::8.8.8.8]'];

/** The address a host form names, as a resolver would answer it (the URL parser's own reading). */
function addressOf(host: string): string {
  const hostname = new URL(`https://${host}/`).hostname;
  return hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
}

/** A resolver answering from a table that tests change (DNS rebinding: a second answer differs from the first). */
const answers = new Map<string, string>();
const lookupAll: LookupAll = async (hostname) => {
  const address = answers.get(hostname);
  if (!address) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return [{ address, family: address.includes(':') ? 6 : 4 }];
};

let strictApp: App;
let service: WebhookService;

beforeAll(async () => {
  strictApp = await buildTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' } });
  service = new WebhookService({
    knex: testKnex(),
    options: { timeoutMs: 2_000, retryDelaysSeconds: [0, 60], disableAfterHours: 120, allowPrivateTargets: false },
    clock: () => new Date(),
    lookupAll,
  });
});

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
    return 'accepted';
  } catch (error) {
    return { name: (error as { name?: string; code?: string }).code ?? (error as Error).name, details: (error as { details?: unknown }).details };
  }
}

describe('at creation', () => {
  it.each(IPV4_IN_IPV6)('https://%s:28093/h (%s) answers 422 WebhookUrlNotAllowed through the API', async (host) => {
    const org = await createOrganization();
    const token = await memberToken(strictApp, org, 'admin');
    const res = await request(strictApp).post(`${businessPath(org.id)}/webhook-endpoints`).set(bearer(token)).send({ url: `https://${host}:28093/h`, events: ['*'] });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ success: false, error: 'WebhookUrlNotAllowed', details: { reason: 'private_address' } });
  });

  it('every other form is refused as a literal and as the address a host name resolves to', async () => {
    const org = await createOrganization();
    const results: Record<string, unknown> = {};
    for (const host of FORMS) {
      const name = `n${crypto.randomUUID().slice(0, 8)}.hooks.example`;
      answers.set(name, addressOf(host));
      results[host] = {
        literal: await refusal(service.create(testKnex(), org.id, { url: `https://${host}:28093/h`, events: ['*'] })),
        resolved: await refusal(service.create(testKnex(), org.id, { url: `https://${name}:28093/h`, events: ['*'] })),
      };
    }
    const refused = { name: 'WebhookUrlNotAllowed', details: { reason: 'private_address' } };
    expect(results).toEqual(Object.fromEntries(FORMS.map((host) => [host, { literal: refused, resolved: refused }])));
  });

  it('public addresses, IPv4 in IPv6 forms included, are accepted', async () => {
    const org = await createOrganization();
    for (const host of PUBLIC_FORMS) {
      const created = await service.create(testKnex(), org.id, { url: `https://${host}:28093/h`, events: ['*'] });
      expect(created.url, host).toBe(`https://${host}:28093/h`);
      await service.remove(org.id, created.id);
    }
  });
});

describe('at delivery', () => {
  it('an endpoint saved with any of the forms (before the guard knew it) is never connected to', async () => {
    const org = await createOrganization();
    const errors: Record<string, unknown> = {};
    for (const host of FORMS) {
      const [row] = (await testKnex()('webhook_endpoints')
        .insert({ organization_id: org.id, url: `https://${host}:28093/h`, events: ['*'], secret: `whsec_${crypto.randomBytes(24).toString('base64')}` })
        .returning('id')) as { id: string }[];
      const delivery = await service.test(org.id, (row as { id: string }).id);
      errors[host] = { status: delivery.status, error: delivery.attempts[0]?.error };
      await testKnex()('webhook_endpoints').where({ id: (row as { id: string }).id }).del();
    }
    expect(errors).toEqual(Object.fromEntries(FORMS.map((host) => [host, { status: 'failed', error: 'url refused: private_address' }])));
  });

  it('a host name that resolved to a public address at creation and to any of the forms at delivery is never connected to', async () => {
    const org = await createOrganization();
    const errors: Record<string, unknown> = {};
    for (const host of FORMS) {
      const name = `r${crypto.randomUUID().slice(0, 8)}.hooks.example`;
      answers.set(name, '93.184.216.34');
      const endpoint = await service.create(testKnex(), org.id, { url: `https://${name}:28093/h`, events: ['*'] });
      answers.set(name, addressOf(host));
      const delivery = await service.test(org.id, endpoint.id);
      errors[host] = { status: delivery.status, error: delivery.attempts[0]?.error };
      await service.remove(org.id, endpoint.id);
    }
    expect(errors).toEqual(Object.fromEntries(FORMS.map((host) => [host, { status: 'failed', error: 'url refused: private_address' }])));
  });
});
