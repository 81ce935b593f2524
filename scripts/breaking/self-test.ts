// `make check-breaking-selftest`: the gate end to end, with Optic, on modified copies of the
// v1.0.0 release (contract-releases/v1.0.0.json):
//   1. a deliberately breaking change (an operation and a response status removed, a request
//      field removed) with only a minor bump: the gate must fail and name them;
//   2. an addition (a new optional response field) without a version bump: must fail;
//   3. the same addition with a minor bump and a CHANGELOG.md line: must pass.
//   4. the release itself: passes without running Optic.
// Each copy keeps only the operations the cases edit (and every component): Optic's run time grows
// with the operations compared, and the gate's logic is the same on two of them as on all.
// The version rules case by case are in test/unit/breaking-rules.test.ts.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');
const RELEASE = join(ROOT, 'contract-releases/v1.0.0.json');

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- a contract copy edited by path

interface Case {
  name: string;
  edit: (contract: Json) => void;
  version: string;
  changelog: string;
  expectOk: boolean;
  expectOutput: string[];
}

const cases: Case[] = [
  {
    name: 'a breaking change with only a minor bump fails',
    edit: (contract) => {
      delete contract.paths['/auth/refresh'];
      delete contract.paths['/transfers'].post.responses['503'];
      delete contract.components.schemas.CreateTransferRequest.properties.note;
    },
    version: '1.1.0',
    changelog: '## [1.1.0]\n- Removed the refresh route.\n',
    expectOk: false,
    expectOutput: [
      'must not remove response status code 503',
      'POST /auth/refresh',
      '/schema/properties/note: request field removed',
      'breaking changes need a new major version: info.version is 1.1.0, the release is 1.0.0 (make it 2.0.0)',
    ],
  },
  {
    name: 'an addition without a version bump fails',
    edit: (contract) => {
      contract.components.schemas.Transfer.properties.partner_note = { type: 'string', maxLength: 64, description: 'new' };
    },
    version: '1.0.0',
    changelog: '## [1.0.0]\n- First.\n',
    expectOk: false,
    expectOutput: ['additions need a new minor version: info.version is 1.0.0, the release is 1.0.0 (make it 1.1.0)'],
  },
  {
    name: 'the same addition with a minor bump and a changelog line passes',
    edit: (contract) => {
      contract.components.schemas.Transfer.properties.partner_note = { type: 'string', maxLength: 64, description: 'new' };
    },
    version: '1.1.0',
    changelog: '## [1.1.0]\n- Transfers show `partner_note`.\n\n## [1.0.0]\n- First.\n',
    expectOk: true,
    expectOutput: ['check-breaking: ok (1.0.0 -> 1.1.0)'],
  },
  {
    name: 'the release itself passes without a diff',
    edit: () => undefined,
    version: '1.0.0',
    changelog: '## [1.0.0]\n- First.\n',
    expectOk: true,
    expectOutput: ["the contract is the release's, unchanged", 'check-breaking: ok (1.0.0 -> 1.0.0)'],
  },
];

/** The operations the cases edit: the copies compared hold these paths only. */
const COMPARED_PATHS = ['/auth/refresh', '/transfers'];

function releaseCopy(): Json {
  const contract = JSON.parse(readFileSync(RELEASE, 'utf8')) as Json;
  contract.paths = Object.fromEntries(COMPARED_PATHS.map((path) => [path, contract.paths[path]]));
  return contract;
}

let passed = 0;
let failed = 0;
const dir = mkdtempSync(join(tmpdir(), 'check-breaking-selftest-'));
try {
  const base = join(dir, 'base.json');
  writeFileSync(base, JSON.stringify(releaseCopy()));
  for (const [index, testCase] of cases.entries()) {
    const contract = releaseCopy();
    testCase.edit(contract);
    contract.info.version = testCase.version;
    const head = join(dir, `head-${index}.json`);
    const changelog = join(dir, `CHANGELOG-${index}.md`);
    writeFileSync(head, JSON.stringify(contract));
    writeFileSync(changelog, testCase.changelog);
    const run = spawnSync('npx', ['--no-install', 'tsx', 'scripts/breaking/check-breaking.ts', '--base', base, '--head', head, '--changelog', changelog], {
      cwd: ROOT,
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    });
    const output = `${run.stdout}\n${run.stderr}`;
    const missing = testCase.expectOutput.filter((text) => !output.includes(text));
    const ok = (run.status === 0) === testCase.expectOk && missing.length === 0;
    if (ok) passed += 1;
    else failed += 1;
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${testCase.name} (exit ${run.status})`);
    if (!ok) {
      for (const text of missing) console.log(`     missing from the output: ${text}`);
      console.log(output.split('\n').map((line) => `     | ${line}`).join('\n'));
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed === 0 ? 0 : 1;
