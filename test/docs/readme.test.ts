import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The README is the front door: at most 150 lines, with the two commands that set the service
 * up (`make run`) and check it (`make test`); the rest lives in docs/ and CHANGELOG.md.
 */
const ROOT = path.resolve(__dirname, '../..');
const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

describe('README.md', () => {
  it('is at most 150 lines', () => {
    expect(readme.replace(/\n$/, '').split('\n').length).toBeLessThanOrEqual(150);
  });

  it('gives the two set-up commands, make run and make test', () => {
    expect(readme).toContain('make run');
    expect(readme).toContain('make test');
  });

  it('links only to files that exist', () => {
    const links = [...readme.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)].map((match) => match[1] as string).filter((target) => !/^[a-z]+:/.test(target));
    expect(links.length).toBeGreaterThan(10);
    expect(links.filter((target) => !fs.existsSync(path.join(ROOT, target)))).toEqual([]);
  });
});
