// The versioning rules of `make check-breaking` (scripts/breaking/rules.ts). The fixtures are
// real `optic diff --json` outputs of Optic 1.0.9 on modified copies of the contract (long
// descriptions trimmed); the gate end to end is scripts/breaking/self-test.ts.
import { describe, expect, it } from 'vitest';
import { classify, changelogSection, decide, parseVersion, type Changelog, type Classification, type SemVer } from '../../scripts/breaking/rules';
import removed from './fixtures/optic-removed-request-field-and-parameter.json';
import added from './fixtures/optic-added-operation-and-field.json';

const v = (text: string): SemVer => {
  const version = parseVersion(text);
  if (!version) throw new Error(text);
  return version;
};
const nothing: Classification = { changed: false, additions: [], extraBreaking: [] };
const addition: Classification = { changed: true, additions: ['GET /new-thing'], extraBreaking: [] };
const docsOnly: Classification = { changed: true, additions: [], extraBreaking: [] };

describe('classify (Optic changelog)', () => {
  it('finds the removed request field and the removed parameter that Optic\'s own check lets through', () => {
    const result = classify(removed as Changelog);
    expect(result.extraBreaking).toEqual([
      'POST /transfers > Request Body > application/json > /schema/properties/rail: request field removed',
      "GET /transfers > query parameter 'starting_after': parameter removed",
    ]);
    expect(result.changed).toBe(true);
  });

  it('sees an added operation and an added field as additions, nothing breaking', () => {
    const result = classify(added as Changelog);
    expect(result.extraBreaking).toEqual([]);
    expect(result.additions[0]).toBe('GET /new-thing');
    expect(result.additions.some((line) => line.includes('note_x'))).toBe(true);
  });

  it('an empty changelog is no change', () => {
    expect(classify({ operations: [] })).toEqual(nothing);
  });

  it('a request bound moved inwards is breaking, outwards is an addition', () => {
    const body = (before: object, after: object): Changelog => ({
      operations: [{ name: 'POST /x', change: 'changed', requestBody: { name: 'Request Body', change: 'changed', contentTypes: [{ name: 'application/json', change: 'changed', attributes: [{ key: '/schema/properties/note', change: 'changed', before, after }] }] } }],
    });
    expect(classify(body({ maxLength: 140 }, { maxLength: 100 })).extraBreaking).toEqual([
      'POST /x > Request Body > application/json > /schema/properties/note: request maxLength narrowed (140 -> 100)',
    ]);
    expect(classify(body({ minimum: 1 }, { minimum: 0 })).extraBreaking).toEqual([]);
    expect(classify(body({ maxLength: 100 }, { maxLength: 140 })).additions).toHaveLength(1);
    expect(classify(body({ description: 'a' }, { description: 'b' })).additions).toEqual([]);
  });
});

describe('decide (versions and CHANGELOG.md)', () => {
  const changelog = (version: string, text = '- Added GET /new-thing.'): string => `# Changelog\n\n## [${version}]\n${text}\n\n## [1.0.0]\n- First.\n`;

  it('refuses a breaking change without a new major version, even with a changelog line', () => {
    const result = decide({ base: v('1.0.0'), head: v('1.1.0'), breaking: ['removed POST /auth/refresh'], classification: docsOnly, changelog: changelog('1.1.0', '- Breaking: removed refresh.') });
    expect(result.ok).toBe(false);
    expect(result.problems[0]).toContain('make it 2.0.0');
  });

  it('accepts a breaking change with a major bump whose section says Breaking, and only then', () => {
    const input = { base: v('1.0.0'), head: v('2.0.0'), breaking: ['x'], classification: docsOnly };
    expect(decide({ ...input, changelog: changelog('2.0.0', '- Breaking: removed refresh.') }).ok).toBe(true);
    expect(decide({ ...input, changelog: changelog('2.0.0', '- Removed refresh.') }).problems).toEqual([`CHANGELOG.md's section for 2.0.0 does not say "Breaking" for the breaking changes`]);
    expect(decide({ ...input, changelog: changelog('1.9.0') }).problems).toEqual(['CHANGELOG.md has no section "## [2.0.0]" recording the breaking changes']);
  });

  it('needs a minor bump and a changelog section for an addition', () => {
    const base = v('1.0.0');
    expect(decide({ base, head: v('1.0.0'), breaking: [], classification: addition, changelog: changelog('1.0.0') }).ok).toBe(false);
    expect(decide({ base, head: v('1.0.1'), breaking: [], classification: addition, changelog: changelog('1.0.1') }).problems[0]).toContain('make it 1.1.0');
    expect(decide({ base, head: v('1.1.0'), breaking: [], classification: addition, changelog: changelog('1.0.9') }).problems).toEqual(['CHANGELOG.md has no section "## [1.1.0]" with a line for the additions']);
    expect(decide({ base, head: v('1.1.0'), breaking: [], classification: addition, changelog: changelog('1.1.0') }).ok).toBe(true);
    expect(decide({ base, head: v('2.0.0'), breaking: [], classification: addition, changelog: changelog('2.0.0') }).ok).toBe(true);
  });

  it('an empty section is not a changelog line', () => {
    const result = decide({ base: v('1.0.0'), head: v('1.1.0'), breaking: [], classification: addition, changelog: changelog('1.1.0', '') });
    expect(result.problems).toEqual(["CHANGELOG.md's section for 1.1.0 is empty"]);
  });

  it('a description change needs a new version (a patch) and a line; no change needs nothing', () => {
    const base = v('1.0.0');
    expect(decide({ base, head: v('1.0.0'), breaking: [], classification: docsOnly, changelog: '' }).ok).toBe(false);
    expect(decide({ base, head: v('1.0.1'), breaking: [], classification: docsOnly, changelog: changelog('1.0.1') }).ok).toBe(true);
    expect(decide({ base, head: v('1.0.0'), breaking: [], classification: nothing, changelog: '' }).ok).toBe(true);
  });

  it('refuses a version older than the release', () => {
    expect(decide({ base: v('1.2.0'), head: v('1.1.0'), breaking: [], classification: nothing, changelog: changelog('1.1.0') }).problems[0]).toContain('older than the release');
  });
});

describe('changelogSection', () => {
  it('reads "## [1.1.0]", "## 1.1.0" and "## v1.1.0" up to the next section, and no other version', () => {
    const text = '## [1.1.0] - 2026-11-24\n- a\n## 1.0.10\n- b\n## v1.0.1\n- c\n';
    expect(changelogSection(text, v('1.1.0'))).toBe('- a');
    expect(changelogSection(text, v('1.0.10'))).toBe('- b');
    expect(changelogSection(text, v('1.0.1'))).toBe('- c');
    expect(changelogSection(text, v('1.0.0'))).toBeUndefined();
    expect(changelogSection(text, v('1.1.1'))).toBeUndefined();
  });
});
