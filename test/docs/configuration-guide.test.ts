import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * docs/operators/configuration.md is "every variable": each environment variable that
 * src/config*.ts reads (`env.NAME`, `env['NAME']`, or a reader given `(env, 'NAME', ...)`)
 * is named there in backticks.
 */
const ROOT = path.resolve(__dirname, '../..');
const page = fs.readFileSync(path.join(ROOT, 'docs/operators/configuration.md'), 'utf8');
const READS = [/\benv\.([A-Z][A-Z0-9_]+)/g, /\benv\[['"]([A-Z][A-Z0-9_]+)['"]\]/g, /\(\s*env\s*,\s*['"]([A-Z][A-Z0-9_]+)['"]/g];

function variablesRead(): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of fs.readdirSync(path.join(ROOT, 'src')).filter((name) => /^config.*\.ts$/.test(name))) {
    const text = fs.readFileSync(path.join(ROOT, 'src', file), 'utf8');
    for (const pattern of READS) for (const match of text.matchAll(pattern)) found.set(match[1] as string, `src/${file}`);
  }
  return found;
}

describe('docs/operators/configuration.md', () => {
  it('names every environment variable src/config*.ts reads', () => {
    const read = variablesRead();
    // The reading finds the three forms: a property, a reader's argument, and the crypto settings' file.
    for (const name of ['NODE_ENV', 'PII_ENCRYPTION_KEY', 'WEBHOOK_MAX_IN_FLIGHT_PER_ORGANIZATION', 'CRYPTO_NETWORK']) expect(read.has(name), name).toBe(true);
    expect(read.size).toBeGreaterThan(70);
    const missing = [...read].filter(([name]) => !page.includes(`\`${name}\``)).map(([name, file]) => `${name} (${file})`);
    expect(missing, 'add a row to the "Every variable" table for each').toEqual([]);
  });
});
