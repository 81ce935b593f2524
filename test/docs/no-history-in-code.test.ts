import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Comments, test titles and messages in the code and its configs say what holds and why. A
 * tracker's issue number, a wave or a review finding tells a reader nothing the code does not
 * say better, and goes stale: none of them appears in src/, test/, scripts/ or the configs.
 * (An upstream project's bug is named by its address, e.g. .../stryker-js/issues/6144.)
 */
const ROOT = path.resolve(__dirname, '../..');
const TREES = ['src', 'test', 'scripts'];
const CONFIGS = [
  'eslint.config.mjs',
  'stryker.config.mjs',
  'vitest.config.mts',
  'vitest.mutation.config.mts',
  'tsconfig.json',
  'tsconfig.build.json',
  'tsconfig.mutation.json',
  '.spectral.yaml',
  'redocly.yaml',
  'Makefile',
  '.ci/run',
];
const TEXT = /\.(ts|mts|cts|js|mjs|cjs|sql|sh|ya?ml|json|txt|md)$/;
const FORBIDDEN: ReadonlyArray<[string, RegExp]> = [
  ['an issue number', /\bissues?[ #]+\d+/i],
  // `'wave'` in quotes is the mobile-money provider Wave, a value of the contract.
  ['a wave', /(?<!')\bwave\b(?!')/i],
  ['a review finding', /\bfindings? \d+/i],
  ['a review of an item', /\breview of (issue )?\d+/i],
];
/**
 * The docs, the README and the changelog say what holds for their readers: no issue number, pull
 * request, wave or review finding either (the changelog keeps what changed per version, never
 * where it was asked for). Wave the mobile-money provider is a name of the contract there:
 * capitalised, or quoted as a value (`wave`, "wave").
 */
const PAGES = ['docs', 'README.md', 'CHANGELOG.md'];
const PAGE_TEXT = /\.(md|ya?ml|json|txt)$/;
const FORBIDDEN_IN_PAGES: ReadonlyArray<[string, RegExp]> = [
  ['an issue number', /\bissues?[ #]+\d+/i],
  ['an issue or pull request number', /(?:^|[\s(])#\d+\b/],
  ['a pull request', /\b(?:PR|pull request) ?#?\d+|\/pull\/\d+|\/issues\/\d+/i],
  ['a wave', /(?<![`'"])\bwave\b(?![`'"])/],
  ['a numbered wave', /\bwaves? ?\d+\b/i],
  ['a review finding', /\bfindings? \d+/i],
  ['a review of an item', /\breview of (issue )?\d+/i],
];
/** The contract is read by integrators and client generators: its texts name no issue or review either (`wave` is an enum value there). */
const CONTRACT = 'openapi';
const FORBIDDEN_IN_CONTRACT = FORBIDDEN_IN_PAGES.filter(([what]) => what !== 'a wave');
/** This file names what it forbids. */
const SELF = path.relative(ROOT, __filename);

function filesUnder(directory: string, text = TEXT): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(path.join(ROOT, directory), { withFileTypes: true })) {
    const relative = path.join(directory, entry.name);
    // Installed packages (scripts/breaking/node_modules) are other projects' text.
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') found.push(...filesUnder(relative, text));
    }
    else if (text.test(entry.name)) found.push(relative);
  }
  return found;
}

function offendingLines(files: string[], forbidden: ReadonlyArray<[string, RegExp]>): string[] {
  const offending: string[] = [];
  for (const file of files) {
    fs.readFileSync(path.join(ROOT, file), 'utf8')
      .split('\n')
      .forEach((line, index) => {
        for (const [what, pattern] of forbidden) if (pattern.test(line)) offending.push(`${file}:${index + 1} names ${what}: ${line.trim()}`);
      });
  }
  return offending;
}

describe('no comment, test title or message names an issue, a wave or a review finding', () => {
  it('holds in src/, test/, scripts/ and the configs', () => {
    const files = [...TREES.flatMap((tree) => filesUnder(tree)).filter((file) => file !== SELF), ...CONFIGS.filter((file) => fs.existsSync(path.join(ROOT, file)))];
    expect(files.length).toBeGreaterThan(100);
    const offending = offendingLines(files, FORBIDDEN);
    expect(offending).toEqual([]);
  });

  it('holds in docs/, README.md and CHANGELOG.md', () => {
    const files = PAGES.flatMap((page) => (fs.statSync(path.join(ROOT, page)).isDirectory() ? filesUnder(page, PAGE_TEXT) : [page]));
    expect(files.length).toBeGreaterThan(40);
    expect(offendingLines(files, FORBIDDEN_IN_PAGES)).toEqual([]);
  });

  it('holds in the contract (openapi/)', () => {
    const files = filesUnder(CONTRACT, PAGE_TEXT);
    expect(files.length).toBeGreaterThan(100);
    expect(offendingLines(files, FORBIDDEN_IN_CONTRACT)).toEqual([]);
  });
});
