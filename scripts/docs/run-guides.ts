/**
 * Runs the integrator guides: every ```sh block of each docs/integrators/*.md, in order, in one
 * bash process per guide (`set -euo pipefail`), so shell variables (tokens, ids) carry from
 * block to block. `API` is the API base URL (API_URL of scripts/with-make-run.sh) and `PAY` the
 * payment page's. A block that must not run uses another fence language (```text, ```json...).
 * Guides are independent of each other's order: they share one demo database.
 *
 *   API_URL=http://127.0.0.1:8080/api npx tsx scripts/docs/run-guides.ts [guide.md ...]   (or `make guides`)
 *
 * The last line says `guides: N passed, M failed`; any failure exits 1.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const GUIDES = path.join(ROOT, 'docs/integrators');
const API = (process.env.API_URL ?? process.env.API ?? '').replace(/\/$/, '');
const PAY = process.env.PAGE_URL ?? process.env.PAY ?? '';

/** The ```sh blocks of a Markdown text, in order (a fence of another language is left alone). */
export function shellBlocks(markdown: string): string[] {
  const blocks: string[] = [];
  let current: string[] | undefined;
  let fence = '';
  for (const line of markdown.split('\n')) {
    if (current === undefined) {
      const open = /^(\s*)(`{3,})(\S*)\s*$/.exec(line);
      if (open) {
        fence = open[2] as string;
        current = open[3] === 'sh' ? [] : undefined;
        if (current === undefined) fence = `skip:${fence}`;
      } else if (fence.startsWith('skip:') && /^\s*`{3,}\s*$/.test(line)) {
        fence = '';
      }
      continue;
    }
    if (new RegExp(`^\\s*${fence}\\s*$`).test(line)) {
      blocks.push(current.join('\n'));
      current = undefined;
      fence = '';
    } else current.push(line);
  }
  return blocks;
}

/** One script of a guide's blocks; on a failure it names the block and its first line. */
export function guideScript(blocks: string[]): string {
  const parts = ['set -euo pipefail', '__block=0', `trap 'status=$?; if [ "$status" -ne 0 ]; then echo "!! failed in sh block $__block (exit $status)" >&2; fi' EXIT`];
  blocks.forEach((block, index) => {
    parts.push(`__block=${index + 1}`, block);
  });
  return `${parts.join('\n')}\n`;
}

function main(): number {
  if (!API) {
    console.error('API_URL is not set: run through scripts/with-make-run.sh (make guides)');
    return 2;
  }
  const files = process.argv.length > 2 ? process.argv.slice(2).map((file) => path.resolve(file)) : fs.readdirSync(GUIDES).filter((name) => name.endsWith('.md')).sort().map((name) => path.join(GUIDES, name));
  let passed = 0;
  const failed: string[] = [];
  const withoutBlocks: string[] = [];
  for (const file of files) {
    const name = path.relative(ROOT, file);
    const blocks = shellBlocks(fs.readFileSync(file, 'utf8'));
    if (blocks.length === 0) {
      withoutBlocks.push(name);
      continue;
    }
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'guide-'));
    const started = Date.now();
    const run = spawnSync('bash', ['-c', guideScript(blocks)], { cwd: work, env: { ...process.env, API, PAY }, encoding: 'utf8', timeout: 300_000, maxBuffer: 64 << 20 });
    fs.rmSync(work, { recursive: true, force: true });
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    if (run.status === 0) {
      passed += 1;
      console.log(`ok   ${name} (${blocks.length} sh blocks, ${seconds} s)`);
    } else {
      failed.push(name);
      const output = `${run.stdout}\n${run.stderr}`.trim().split('\n').slice(-40).join('\n     ');
      console.log(`FAIL ${name} (exit ${run.status ?? run.signal}, ${seconds} s)\n     ${output}`);
    }
  }
  if (withoutBlocks.length > 0) console.log(`no sh block (nothing to run): ${withoutBlocks.join(', ')}`);
  console.log(`guides: ${passed} passed, ${failed.length} failed`);
  return failed.length === 0 ? 0 : 1;
}

if (require.main === module) process.exitCode = main();
