// The versioning rules of the breaking-change gate (`make check-breaking`), kept pure so that
// test/unit/breaking-rules.test.ts checks each one without running the diff tool.
//
// Optic (`optic diff --check`) decides what is breaking in responses, required fields and
// parameters, types, enums and statuses. Its 1.0.9 ruleset lets two breaking changes through
// (tried: removing an optional request field and removing a query parameter both pass its
// check), so `extraBreakingChanges` adds them from Optic's own changelog (`--json`).

export interface SemVer {
  major: number;
  minor: number;
  patch: number;
}

export function parseVersion(text: string): SemVer | undefined {
  const match = /^v?(\d+)\.(\d+)\.(\d+)$/.exec(text.trim());
  if (!match) return undefined;
  return { major: Number(match[1]), minor: Number(match[2]), patch: Number(match[3]) };
}

export function compareVersions(a: SemVer, b: SemVer): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

export function formatVersion(v: SemVer): string {
  return `${v.major}.${v.minor}.${v.patch}`;
}

/** One node of Optic's `--json` changelog (operations, parameters, bodies, attributes). */
interface ChangeNode {
  name?: string;
  key?: string;
  change?: string;
  before?: unknown;
  after?: unknown;
  [child: string]: unknown;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function children(node: ChangeNode): ChangeNode[] {
  const out: ChangeNode[] = [];
  for (const [key, value] of Object.entries(node)) {
    if (key === 'before' || key === 'after') continue;
    if (Array.isArray(value)) out.push(...value.filter(isObject));
    else if (isObject(value)) out.push(value);
  }
  return out;
}

/** JSON paths of every leaf under a value (`a/b/0`), to see what an attribute change added. */
function leafPaths(value: unknown, prefix = ''): Set<string> {
  const paths = new Set<string>();
  if (isObject(value) || Array.isArray(value)) {
    for (const [key, child] of Object.entries(value)) {
      for (const path of leafPaths(child, `${prefix}/${key}`)) paths.add(path);
    }
    if (Object.keys(value).length === 0) paths.add(prefix);
  } else {
    paths.add(`${prefix}=${JSON.stringify(value)}`);
  }
  return paths;
}

const UPPER_BOUNDS = ['maxLength', 'maxItems', 'maximum', 'exclusiveMaximum', 'maxProperties'];
const LOWER_BOUNDS = ['minLength', 'minItems', 'minimum', 'exclusiveMinimum', 'minProperties'];

/** A request value the old contract accepted and the new one refuses: a bound moved inwards, or a new pattern. */
function narrowedBounds(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  const found: string[] = [];
  for (const key of [...UPPER_BOUNDS, ...LOWER_BOUNDS]) {
    const was = before[key];
    const now = after[key];
    if (typeof now !== 'number') continue;
    const upper = UPPER_BOUNDS.includes(key);
    if (typeof was !== 'number' || (upper ? now < was : now > was)) found.push(`request ${key} narrowed (${String(was ?? 'none')} -> ${now})`);
  }
  if (typeof after.pattern === 'string' && after.pattern !== before.pattern) found.push('request pattern changed');
  return found;
}

export interface Changelog {
  operations: ChangeNode[];
}

export interface Classification {
  /** Any difference in an operation at all (a description counts). */
  changed: boolean;
  /** Something new: an operation, parameter, status, field or enum value. */
  additions: string[];
  /** Breaking changes Optic's ruleset does not check (see the header). */
  extraBreaking: string[];
}

export function classify(changelog: Changelog): Classification {
  const additions: string[] = [];
  const extraBreaking: string[] = [];
  const walk = (node: ChangeNode, where: string[], inRequest: boolean): void => {
    const label = node.name ?? node.key ?? '';
    const here = label ? [...where, label] : where;
    const request = inRequest || node.name === 'Request Body';
    if (node.change === 'added') additions.push(here.join(' > '));
    if (node.change === 'removed') {
      if (/parameter '/.test(label)) extraBreaking.push(`${here.join(' > ')}: parameter removed`);
      else if (request && label.startsWith('/schema/properties/')) extraBreaking.push(`${here.join(' > ')}: request field removed`);
      else if (request && here.length > 1) extraBreaking.push(`${here.join(' > ')}: removed from the request`);
    }
    if (node.change === 'changed' && request && isObject(node.before) && isObject(node.after)) {
      for (const narrowing of narrowedBounds(node.before, node.after)) extraBreaking.push(`${here.join(' > ')}: ${narrowing}`);
    }
    if (node.change === 'changed' && (isObject(node.before) || isObject(node.after))) {
      const before = leafPaths(node.before ?? {});
      const added = [...leafPaths(node.after ?? {})].filter((path) => !before.has(path) && !path.includes('/description') && !path.includes('/example'));
      if (added.length > 0) additions.push(`${here.join(' > ')} (${added.slice(0, 3).join(', ')})`);
    }
    for (const child of children(node)) walk(child, here, request);
  };
  for (const operation of changelog.operations) walk(operation, [], false);
  return { changed: changelog.operations.length > 0, additions, extraBreaking };
}

/** The section of CHANGELOG.md for a version: `## [1.1.0]`, `## 1.1.0` or `## v1.1.0` up to the next `## `. */
export function changelogSection(changelog: string, version: SemVer): string | undefined {
  const wanted = formatVersion(version).replaceAll('.', '\\.');
  const heading = new RegExp(`^##\\s+\\[?v?${wanted}\\]?(?:[ \\t].*)?$`, 'm');
  const match = heading.exec(changelog);
  if (!match) return undefined;
  const rest = changelog.slice(match.index + match[0].length);
  const next = /^##\s/m.exec(rest);
  return (next ? rest.slice(0, next.index) : rest).trim();
}

export interface GateInput {
  base: SemVer;
  head: SemVer;
  /** Breaking changes found (Optic's failed rules, plus `extraBreaking`). */
  breaking: string[];
  classification: Classification;
  changelog: string;
}

export interface GateResult {
  ok: boolean;
  /** What a contributor must do, one line each (empty when ok). */
  problems: string[];
  /** What was found, for the log. */
  summary: string;
}

export function decide(input: GateInput): GateResult {
  const { base, head, breaking, classification, changelog } = input;
  const problems: string[] = [];
  const b = formatVersion(base);
  const h = formatVersion(head);
  const section = changelogSection(changelog, head);
  const versionChanged = compareVersions(head, base) !== 0;
  let summary: string;

  if (compareVersions(head, base) < 0) {
    problems.push(`info.version ${h} is older than the release it is compared with (${b})`);
  }
  if (breaking.length > 0) {
    summary = `${breaking.length} breaking finding(s) since ${b} (Optic's failed checks count as one)`;
    if (head.major <= base.major) {
      problems.push(`breaking changes need a new major version: info.version is ${h}, the release is ${b} (make it ${base.major + 1}.0.0)`);
    }
    if (section === undefined) problems.push(`CHANGELOG.md has no section "## [${h}]" recording the breaking changes`);
    else if (!/breaking/i.test(section)) problems.push(`CHANGELOG.md's section for ${h} does not say "Breaking" for the breaking changes`);
  } else if (classification.additions.length > 0) {
    summary = `${classification.additions.length} addition(s) since ${b}, nothing breaking`;
    if (head.major === base.major && head.minor <= base.minor) {
      problems.push(`additions need a new minor version: info.version is ${h}, the release is ${b} (make it ${base.major}.${base.minor + 1}.0)`);
    }
    if (section === undefined) problems.push(`CHANGELOG.md has no section "## [${h}]" with a line for the additions`);
  } else if (classification.changed) {
    summary = `operations changed since ${b} (descriptions or examples only), nothing added or breaking`;
    if (!versionChanged) problems.push(`the contract changed: raise info.version above ${b} (a patch is enough) and add a CHANGELOG.md line`);
    else if (section === undefined) problems.push(`CHANGELOG.md has no section "## [${h}]"`);
  } else {
    summary = `no operation changed since ${b}`;
    if (versionChanged && !section) problems.push(`CHANGELOG.md has no section "## [${h}]" for the new info.version`);
  }
  if (section !== undefined && section.length === 0) problems.push(`CHANGELOG.md's section for ${h} is empty`);
  return { ok: problems.length === 0, problems, summary };
}
