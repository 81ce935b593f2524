// `make check-breaking`: compare the contract (openapi/) with the newest release and refuse a
// breaking change unless info.version's major part changed and CHANGELOG.md records it;
// additions need a minor bump and a CHANGELOG.md line (rules: scripts/breaking/rules.ts).
//
// The newest release is the highest `vX.Y.Z` among
//   - git tags (a clone without tags runs `git fetch --tags` from its origin first, when it has one), and
//   - contract-releases/vX.Y.Z.json, the bundled contract of each release, committed,
// so a clone that carries no tag and cannot fetch them still has every release. When a release
// is both a tag and a file, the two must be the same contract (the file is the tag's
// generated/openapi.bundled.json), or the gate fails.
//
// The diff is Optic's (@useoptic/optic 1.0.9, installed under scripts/breaking/node_modules
// by the Makefile with --ignore-scripts: no binary, no network at run time, telemetry off).
//
// Options (the self-test uses them): --head FILE (a bundled contract instead of openapi/),
// --changelog FILE, --base FILE (skip the release search), --no-explain (no second Optic run
// to print its reasons).
import { execFileSync, spawnSync } from 'node:child_process';
import { isDeepStrictEqual } from 'node:util';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { classify, compareVersions, decide, formatVersion, parseVersion, type Changelog, type SemVer } from './rules';

const ROOT = resolve(__dirname, '../..');
const RELEASES_DIR = join(ROOT, 'contract-releases');
const OPTIC = join(ROOT, 'scripts/breaking/node_modules/.bin/optic');

function option(name: string): string | undefined {
  const index = process.argv.indexOf(name);
  return index >= 0 ? process.argv[index + 1] : undefined;
}

function git(args: string[]): { ok: boolean; out: string } {
  // A fetch from an origin that does not answer must not hold the gate: 30 s, then the files.
  const result = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8', timeout: 30_000, env: { ...process.env, GIT_TERMINAL_PROMPT: '0' } });
  return { ok: result.status === 0, out: (result.stdout ?? '').trim() };
}

interface Release {
  version: SemVer;
  tag?: string;
  file?: string;
}

function findReleases(): Release[] {
  const byVersion = new Map<string, Release>();
  const add = (version: SemVer, patch: Partial<Release>): void => {
    const key = formatVersion(version);
    byVersion.set(key, { ...(byVersion.get(key) ?? { version }), ...patch });
  };
  let tags = git(['tag', '--list', 'v*.*.*']).out.split('\n').filter(Boolean);
  if (tags.length === 0 && git(['remote', 'get-url', 'origin']).ok) {
    console.log('no release tag in this clone: git fetch --tags origin');
    git(['fetch', '--tags', '--quiet', 'origin']);
    tags = git(['tag', '--list', 'v*.*.*']).out.split('\n').filter(Boolean);
  }
  for (const tag of tags) {
    const version = parseVersion(tag);
    if (version) add(version, { tag });
  }
  if (existsSync(RELEASES_DIR)) {
    for (const name of readdirSync(RELEASES_DIR)) {
      const version = name.endsWith('.json') ? parseVersion(name.slice(0, -'.json'.length)) : undefined;
      if (version) add(version, { file: join(RELEASES_DIR, name) });
    }
  }
  return [...byVersion.values()].sort((a, b) => compareVersions(b.version, a.version));
}

/** The release's bundled contract, written to `dir`; the tag and the committed file must agree. */
function releaseContract(release: Release, dir: string): string {
  const path = join(dir, `base-${formatVersion(release.version)}.json`);
  let fromTag: string | undefined;
  if (release.tag) {
    const shown = spawnSync('git', ['show', `${release.tag}:generated/openapi.bundled.json`], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 });
    if (shown.status === 0) fromTag = shown.stdout;
  }
  const fromFile = release.file ? readFileSync(release.file, 'utf8') : undefined;
  if (fromTag !== undefined && fromFile !== undefined && JSON.stringify(JSON.parse(fromTag)) !== JSON.stringify(JSON.parse(fromFile))) {
    throw new Error(`tag ${release.tag} and ${release.file} are different contracts: a release is never edited`);
  }
  const text = fromTag ?? fromFile;
  if (text === undefined) throw new Error(`release ${formatVersion(release.version)} has no readable contract`);
  writeFileSync(path, text);
  return path;
}

function bundleHead(dir: string): string {
  const path = join(dir, 'head.json');
  execFileSync('npx', ['--no-install', 'redocly', 'bundle', 'openapi/openapi.yaml', '-o', path], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', REDOCLY_SUPPRESS_NOTIFICATIONS: 'true' },
  });
  return path;
}

/**
 * A copy of a bundled contract without \`x-codeSamples\`: \`make generate\` writes them into the
 * bundle (so a release made from it carries them) while the head is bundled from openapi/
 * afresh; samples are documentation, never part of what the gate compares.
 */
function withoutCodeSamples(path: string, dir: string, name: string): string {
  const document = JSON.parse(readFileSync(path, 'utf8')) as { paths?: Record<string, Record<string, Record<string, unknown>>> };
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item)) {
      if (operation && typeof operation === 'object') delete operation['x-codeSamples'];
    }
  }
  const copy = join(dir, name);
  writeFileSync(copy, JSON.stringify(document));
  return copy;
}

function infoVersion(path: string): SemVer {
  const document = JSON.parse(readFileSync(path, 'utf8')) as { info?: { version?: string } };
  const version = parseVersion(document.info?.version ?? '');
  if (!version) throw new Error(`${path}: info.version "${document.info?.version}" is not MAJOR.MINOR.PATCH`);
  return version;
}

function optic(base: string, head: string, json: boolean, dir: string): { status: number; stdout: string } {
  if (!existsSync(OPTIC)) throw new Error(`${OPTIC} is missing: run \`make check-breaking\` (it installs scripts/breaking)`);
  const args = ['diff', base, head, '--check', ...(json ? ['--json'] : [])];
  const result = spawnSync(OPTIC, args, {
    cwd: dir,
    encoding: 'utf8',
    maxBuffer: 256 << 20,
    env: { ...process.env, OPTIC_TELEMETRY_LEVEL: 'off', CI: 'true' },
  });
  if (result.status === null || result.status > 1) {
    throw new Error(`optic diff failed (status ${result.status}): ${result.stderr}`);
  }
  return { status: result.status, stdout: result.stdout };
}

function main(): number {
  const dir = mkdtempSync(join(tmpdir(), 'check-breaking-'));
  try {
    let basePath = option('--base');
    let baseLabel = basePath ?? '';
    if (!basePath) {
      const releases = findReleases();
      const newest = releases[0];
      if (!newest) {
        console.error('no release to compare with: no vX.Y.Z tag and nothing in contract-releases/');
        return 1;
      }
      basePath = releaseContract(newest, dir);
      baseLabel = `v${formatVersion(newest.version)} (${[newest.tag && `tag ${newest.tag}`, newest.file && 'contract-releases/'].filter(Boolean).join(' + ')})`;
    }
    basePath = withoutCodeSamples(basePath, dir, 'base-compared.json');
    const headPath = withoutCodeSamples(option('--head') ?? bundleHead(dir), dir, 'head-compared.json');
    const changelogPath = option('--changelog') ?? join(ROOT, 'CHANGELOG.md');
    const base = infoVersion(basePath);
    const head = infoVersion(headPath);
    console.log(`comparing the contract (info.version ${formatVersion(head)}) with release ${baseLabel}, info.version ${formatVersion(base)}`);

    // Identical documents cannot differ: Optic (about 90 s of CPU on this contract) is not run.
    if (isDeepStrictEqual(JSON.parse(readFileSync(basePath, 'utf8')), JSON.parse(readFileSync(headPath, 'utf8')))) {
      console.log(`the contract is the release's, unchanged\ncheck-breaking: ok (${formatVersion(base)} -> ${formatVersion(head)})`);
      return 0;
    }

    const run = optic(basePath, headPath, true, dir);
    const changelog = JSON.parse(run.stdout) as Changelog;
    const classification = classify(changelog);
    const breaking = [...(run.status === 1 ? ['Optic: the breaking-changes ruleset failed (its reasons follow)'] : []), ...classification.extraBreaking];
    if (run.status === 1 && !process.argv.includes('--no-explain')) {
      console.log(optic(basePath, headPath, false, dir).stdout.split('\n').filter((line) => !line.includes('--web flag') && !line.includes('useoptic.com')).join('\n'));
    }
    for (const line of classification.extraBreaking) console.log(`  x ${line}`);
    for (const line of classification.additions.slice(0, 20)) console.log(`  + ${line}`);
    if (classification.additions.length > 20) console.log(`  + ... ${classification.additions.length - 20} more`);

    const result = decide({ base, head, breaking, classification, changelog: existsSync(changelogPath) ? readFileSync(changelogPath, 'utf8') : '' });
    console.log(result.summary);
    if (!result.ok) {
      for (const problem of result.problems) console.error(`check-breaking: ${problem}`);
      return 1;
    }
    console.log(`check-breaking: ok (${formatVersion(base)} -> ${formatVersion(head)})`);
    return 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

process.exitCode = main();
