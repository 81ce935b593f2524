/**
 * `make bench`: runs every benchmark under scripts/bench/ one after the other, prints their
 * JSON, and ends with one table: each benchmark, what it measured against what in the same
 * run, its target, and whether it was met. BENCH_ONLY=health,transfers runs a subset.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

interface Target {
  benchmark: string;
  measured: string;
  target: string;
  met: boolean;
}

const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
const benches = fs
  .readdirSync(__dirname)
  .filter((file) => file.endsWith('.ts') && !['run.ts', 'bench-support.ts'].includes(file))
  .map((file) => file.replace(/\.ts$/, ''))
  .filter((name) => !only || only.includes(name))
  .sort();

/** The `targets` of the JSON object a benchmark printed last (none when it printed none). */
function targetsOf(output: string): Target[] | undefined {
  const start = output.lastIndexOf('\n{');
  try {
    const result = JSON.parse(output.slice(start + 1)) as { targets?: Target[] };
    return result.targets;
  } catch {
    return undefined;
  }
}

const rows: Target[] = [];
let failed = 0;
for (const name of benches) {
  process.stdout.write(`\n### ${name}\n`);
  const taskset = fs.existsSync('/usr/bin/taskset') ? ['taskset', '-c', '1'] : [];
  const [command, ...args] = [...taskset, 'node_modules/.bin/tsx', path.join('scripts/bench', `${name}.ts`)];
  const result = spawnSync(command as string, args, { stdio: ['ignore', 'pipe', 'inherit'], env: process.env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  process.stdout.write(result.stdout ?? '');
  if (result.status !== 0) failed += 1;
  // A benchmark that missed a hard condition (errors, violations) exits 1 but still reports.
  const targets = targetsOf(result.stdout ?? '');
  if (targets) rows.push(...targets);
  else rows.push({ benchmark: name, measured: result.status === 0 ? '(no target)' : `failed (exit ${result.status})`, target: '-', met: result.status === 0 });
}

const header: Target = { benchmark: 'benchmark', measured: 'measured (same run)', target: 'target', met: true };
const width = (key: 'benchmark' | 'measured' | 'target') => Math.max(...[header, ...rows].map((row) => row[key].length));
const line = (row: Target, met: string) => `| ${row.benchmark.padEnd(width('benchmark'))} | ${row.measured.padEnd(width('measured'))} | ${row.target.padEnd(width('target'))} | ${met.padEnd(3)} |`;
process.stdout.write(`\n${line(header, 'met')}\n`);
process.stdout.write(`|${'-'.repeat(width('benchmark') + 2)}|${'-'.repeat(width('measured') + 2)}|${'-'.repeat(width('target') + 2)}|-----|\n`);
for (const row of rows) process.stdout.write(`${line(row, row.target === '-' ? '-' : row.met ? 'yes' : 'no')}\n`);
process.exit(failed ? 1 : 0);
