import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The integrators' errors guide is the whole table of error names by status: every name the
 * contract documents (an `error` const or enum of a response schema, or an example's `error`)
 * has a row under each status the contract gives it; and every name the code throws (the
 * `code` given to an error of src/errors.ts, read from src/) is in the guide and the contract,
 * unless it never reaches the API's clients (INTERNAL says why).
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

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(file) : entry.name.endsWith('.ts') ? [file] : [];
  });
}

/** The text between the parenthesis at `open` and the one that closes it. */
function argumentsAt(text: string, open: number): string {
  let depth = 0;
  for (let index = open; index < text.length; index += 1) {
    if (text[index] === '(') depth += 1;
    else if (text[index] === ')' && --depth === 0) return text.slice(open + 1, index);
  }
  return '';
}

/**
 * error name -> files that throw it: the one-word PascalCase string literals among the arguments
 * of `new SomethingError(...)` and of `super(...)` (an error class passing its code up), the
 * only places a code is written (a message is a sentence, never one word).
 */
function thrownErrors(): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  for (const file of sourceFiles(path.join(ROOT, 'src'))) {
    const text = fs.readFileSync(file, 'utf8');
    for (const call of text.matchAll(/\b(?:super|new [A-Z]\w*Error)\s*(?=\()/g)) {
      for (const literal of argumentsAt(text, (call.index ?? 0) + call[0].length).matchAll(/'([A-Z][a-z]+(?:[A-Z][a-z]*)*)'/g)) {
        const name = literal[1] as string;
        if (!found.has(name)) found.set(name, new Set());
        found.get(name)?.add(path.relative(ROOT, file));
      }
    }
  }
  return found;
}

/** Names thrown in src/ that no client of the API meets, and why. */
const INTERNAL: Record<string, string> = {
  DuplicatePosting: "the ledger's last guard against one object posted twice: every writer holds the object's lock first",
  RefundNotFound: 'settling a refund in the transaction that created it',
  PaymentPageError: "the payment page's own HTML answers (src/pay), not the API's envelope",
  PaymentRefused: "the payment page's own HTML answers (src/pay), not the API's envelope",
};
/** Names the pipeline answers that no operation's response lists. */
const PIPELINE = new Set(['MethodNotAllowed', 'NotImplemented']);

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
    const unknown = [...guideRows()].map((row) => row.split(' ')[1] as string).filter((name) => !documented.has(name) && !PIPELINE.has(name));
    expect(unknown).toEqual([]);
  });

  it('has a row for every error name thrown in src/ that reaches clients, and the contract names each in a response', () => {
    const thrown = thrownErrors();
    // The reading finds codes passed up by error classes and given at a throw.
    for (const name of ['PayoutNotFound', 'InsufficientFunds', 'VerificationSessionNotFound', 'TooManyStreams', 'DuplicatePosting']) expect(thrown.has(name), name).toBe(true);
    expect(thrown.size).toBeGreaterThan(80);
    const named = new Set([...guideRows()].map((row) => row.split(' ')[1] as string));
    const documented = documentedErrors();
    const missing: string[] = [];
    for (const [name, files] of thrown) {
      if (name in INTERNAL) continue;
      if (!named.has(name)) missing.push(`${name} (${[...files].join(', ')}): no row in docs/integrators/errors.md`);
      if (!documented.has(name) && !PIPELINE.has(name)) missing.push(`${name} (${[...files].join(', ')}): no response of the contract names it (an example, or the error schema)`);
    }
    expect(missing).toEqual([]);
    expect(Object.keys(INTERNAL).filter((name) => !thrown.has(name)), 'INTERNAL names only names src/ throws').toEqual([]);
  });
});
