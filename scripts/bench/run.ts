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

/** One load point of a benchmark: what the API served under `connections` concurrent clients. */
interface LoadPoint {
  connections: number;
  ours: { requests_per_s: number; p99_ms: number; server_cpu_ms_per_request: number };
}

/** What a benchmark printed last (its JSON result), as far as this summary reads it. */
interface BenchResult {
  targets?: Target[];
  point?: LoadPoint;
  curve?: LoadPoint[];
}

/** The JSON object a benchmark printed last (undefined when it printed none). */
function resultOf(output: string): BenchResult | undefined {
  const start = output.lastIndexOf('\n{');
  try {
    return JSON.parse(output.slice(start + 1)) as BenchResult;
  } catch {
    return undefined;
  }
}

/**
 * An escrow or tontine action against a transfer of the same run, at the same concurrency: each
 * runs the same write path, so each should serve at least 0.8x the transfers' requests/s with a
 * p99 under 100 ms, an escrow action at most 1.5x a transfer's API CPU.
 */
function againstTransfers(name: string, label: string, results: Map<string, BenchResult>, maxCpuRatio?: number): Target | undefined {
  const point = results.get(name)?.point;
  const transfer = point && results.get('transfers')?.curve?.find((candidate) => candidate.connections === point.connections);
  if (!point || !transfer) return undefined;
  const ratio = point.ours.requests_per_s / transfer.ours.requests_per_s;
  const cpuRatio = point.ours.server_cpu_ms_per_request / transfer.ours.server_cpu_ms_per_request;
  const cpuMet = maxCpuRatio === undefined || cpuRatio <= maxCpuRatio;
  return {
    benchmark: `${label} vs transfers (${point.connections} conn)`,
    measured: `${ratio.toFixed(2)}x (${point.ours.requests_per_s} vs ${transfer.ours.requests_per_s} requests/s), p99 ${point.ours.p99_ms} ms, API CPU ${cpuRatio.toFixed(2)}x (${point.ours.server_cpu_ms_per_request} vs ${transfer.ours.server_cpu_ms_per_request} ms)`,
    target: `>= 0.8x, p99 < 100 ms${maxCpuRatio === undefined ? '' : `, API CPU <= ${maxCpuRatio}x`}`,
    met: ratio >= 0.8 && point.ours.p99_ms < 100 && cpuMet,
  };
}

const rows: Target[] = [];
const results = new Map<string, BenchResult>();
let failed = 0;
for (const name of benches) {
  process.stdout.write(`\n### ${name}\n`);
  const taskset = fs.existsSync('/usr/bin/taskset') ? ['taskset', '-c', '1'] : [];
  const [command, ...args] = [...taskset, 'node_modules/.bin/tsx', path.join('scripts/bench', `${name}.ts`)];
  const result = spawnSync(command as string, args, { stdio: ['ignore', 'pipe', 'inherit'], env: process.env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  process.stdout.write(result.stdout ?? '');
  if (result.status !== 0) failed += 1;
  // A benchmark that missed a hard condition (errors, violations) exits 1 but still reports.
  const printed = resultOf(result.stdout ?? '');
  if (printed) results.set(name, printed);
  const targets = printed?.targets;
  if (targets) rows.push(...targets);
  else rows.push({ benchmark: name, measured: result.status === 0 ? '(no target)' : `failed (exit ${result.status})`, target: '-', met: result.status === 0 });
}
for (const compared of [againstTransfers('escrows', 'escrow fund+accept', results, 1.5), againstTransfers('tontines', 'tontine contributions', results)]) {
  if (compared) rows.push(compared);
}

const header: Target = { benchmark: 'benchmark', measured: 'measured (same run)', target: 'target', met: true };
const width = (key: 'benchmark' | 'measured' | 'target') => Math.max(...[header, ...rows].map((row) => row[key].length));
const line = (row: Target, met: string) => `| ${row.benchmark.padEnd(width('benchmark'))} | ${row.measured.padEnd(width('measured'))} | ${row.target.padEnd(width('target'))} | ${met.padEnd(3)} |`;
process.stdout.write(`\n${line(header, 'met')}\n`);
process.stdout.write(`|${'-'.repeat(width('benchmark') + 2)}|${'-'.repeat(width('measured') + 2)}|${'-'.repeat(width('target') + 2)}|-----|\n`);
for (const row of rows) process.stdout.write(`${line(row, row.target === '-' ? '-' : row.met ? 'yes' : 'no')}\n`);
process.exit(failed ? 1 : 0);
