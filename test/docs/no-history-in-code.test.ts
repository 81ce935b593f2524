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
/** This file names what it forbids. */
const SELF = path.relative(ROOT, __filename);

function filesUnder(directory: string): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(path.join(ROOT, directory), { withFileTypes: true })) {
    const relative = path.join(directory, entry.name);
    // Installed packages (scripts/breaking/node_modules) are other projects' text.
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') found.push(...filesUnder(relative));
    }
    else if (TEXT.test(entry.name)) found.push(relative);
  }
  return found;
}

describe('no comment, test title or message names an issue, a wave or a review finding', () => {
  it('holds in src/, test/, scripts/ and the configs', () => {
    const files = [...TREES.flatMap(filesUnder).filter((file) => file !== SELF), ...CONFIGS.filter((file) => fs.existsSync(path.join(ROOT, file)))];
    expect(files.length).toBeGreaterThan(100);
    const offending: string[] = [];
    for (const file of files) {
      fs.readFileSync(path.join(ROOT, file), 'utf8')
        .split('\n')
        .forEach((line, index) => {
          for (const [what, pattern] of FORBIDDEN) if (pattern.test(line)) offending.push(`${file}:${index + 1} names ${what}: ${line.trim()}`);
        });
    }
    expect(offending).toEqual([]);
  });
});
