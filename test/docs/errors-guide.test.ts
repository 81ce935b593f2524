import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The integrators' errors guide is the whole table of error names by status: every name the
 * contract documents (an `error` const or enum of a response schema, or an example's `error`)
 * has a row under each status the contract gives it.
 */
type Json = Record<string, unknown>;
const ROOT = path.resolve(__dirname, '../..');
const contract = JSON.parse(fs.readFileSync(path.join(ROOT, 'generated/openapi.bundled.json'), 'utf8')) as Json;
const guide = fs.readFileSync(path.join(ROOT, 'docs/integrators/errors.md'), 'utf8');

function resolve(node: unknown): Json {
  let current = node as Json;
  while (current && typeof current.$ref === 'string') {
    current = current.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>((at, key) => (at as Json)[key.replace(/~1/g, '/').replace(/~0/g, '~')], contract) as Json;
  }
  return current;
}

function errorNames(schema: unknown, seen = new Set<Json>()): string[] {
  const node = resolve(schema);
  if (!node || typeof node !== 'object' || seen.has(node)) return [];
  seen.add(node);
  const names: string[] = [];
  const error = resolve((node.properties as Json | undefined)?.error);
  if (error) {
    if (typeof error.const === 'string') names.push(error.const);
    if (Array.isArray(error.enum)) names.push(...(error.enum as string[]));
  }
  for (const key of ['oneOf', 'anyOf', 'allOf']) for (const part of (node[key] as unknown[] | undefined) ?? []) names.push(...errorNames(part, seen));
  return names;
}

/** error name -> statuses the contract answers it with */
function documentedErrors(): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  const add = (name: string, status: string) => {
    if (!found.has(name)) found.set(name, new Set());
    found.get(name)?.add(status);
  };
  for (const item of Object.values(contract.paths as Record<string, Json>)) {
    for (const operation of Object.values(item) as Json[]) {
      for (const [status, raw] of Object.entries((operation.responses ?? {}) as Json)) {
        if (!/^[45]\d\d$/.test(status)) continue;
        const media = (resolve(raw).content as Record<string, Json> | undefined)?.['application/json'];
        if (!media) continue;
        for (const name of errorNames(media.schema)) add(name, status);
        for (const example of Object.values((media.examples ?? {}) as Record<string, unknown>)) {
          const value = resolve(example).value as Json | undefined;
          if (typeof value?.error === 'string') add(value.error, status);
        }
      }
    }
  }
  return found;
}

/** The rows `| status | \`Name\` | when |` of the guide's table by status. */
function guideRows(): Set<string> {
  const rows = new Set<string>();
  for (const match of guide.matchAll(/^\| (\d{3}) \| `([A-Za-z]+)` \|/gm)) rows.add(`${match[1]} ${match[2]}`);
  return rows;
}

describe('docs/integrators/errors.md', () => {
  it('has a row for every error name of the contract, under each status the contract answers it with', () => {
    const documented = documentedErrors();
    expect(documented.size).toBeGreaterThan(40);
    const rows = guideRows();
    const missing: string[] = [];
    for (const [name, statuses] of documented) {
      // ValidationError is the generic envelope's example on most statuses; its rows are 400 and 422.
      if (name === 'ValidationError') continue;
      for (const status of statuses) if (!rows.has(`${status} ${name}`)) missing.push(`${status} ${name}`);
    }
    expect(missing, 'add a row "| status | `Name` | when |" to docs/integrators/errors.md for each').toEqual([]);
  });

  it('names no error the contract does not document (besides the envelope-level ones of the pipeline)', () => {
    const documented = documentedErrors();
    const pipeline = new Set(['MethodNotAllowed', 'NotImplemented', 'TooManyStreams']);
    const unknown = [...guideRows()].map((row) => row.split(' ')[1] as string).filter((name) => !documented.has(name) && !pipeline.has(name));
    expect(unknown).toEqual([]);
  });
});
