/**
 * POST /api/transfers (P2P, a fresh Idempotency-Key per request, spread over many sender
 * wallets) against pgbench's built-in TPC-B transaction (scale 10) with the same client
 * count, on the same PostgreSQL server, in the same run: a load curve at 1, 8, 32 and 128
 * connections (BENCH_CONNECTIONS_LIST), each with throughput, p50, p99, errors, CPU per
 * transfer on each side and the group commit's batch size distribution (issue 21). Then proves
 * the ledger invariants held. Targets (issue 21): at 32 connections >= 0.8x TPC-B and p99 < 50
 * ms; at 128, 0 errors and p99 < 200 ms; 0 errors and 0 violations everywhere. pgbench's clients
 * are capped to the connections the server has left (128 TPC-B clients need max_connections > 150).
 *
 * Needs PostgreSQL and pgbench: DATABASE_URL, or postgres://postgres@127.0.0.1:5432/postgres.
 * Two scratch databases are created and dropped. The API runs in a child process pinned to
 * core 0 (production settings); autocannon and pgbench run from here (`make bench` pins this
 * script to core 1). BENCH_DURATION_S, BENCH_CONNECTIONS and BENCH_SENDERS override defaults;
 * BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles the API.
 */
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type autocannon from 'autocannon';
import type { Knex } from 'knex';
import { loadConfig } from '../../src/config';
import { withTransaction } from '../../src/db/transaction';
import { SessionService, TokenService } from '../../src/modules/auth';
import { fundWallet, reconcile } from '../../src/modules/ledger';
import {
  BENCH_JWT_SECRET,
  createScratchDatabase,
  postgresCpuMs,
  printResult,
  runAutocannon,
  runPgbenchScript,
  startServerProcess,
  transferCreateScript,
  type BatchSizes,
  type LoadResult,
} from './bench-support';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTION_LIST = (process.env.BENCH_CONNECTIONS_LIST ?? process.env.BENCH_CONNECTIONS ?? '1,8,32,128').split(',').map(Number);
const SENDERS = Number(process.env.BENCH_SENDERS ?? 256);

interface Sender {
  id: string;
  email: string;
  token: string;
}

/** CPU milliseconds per unit of work, two decimals. */
function perUnit(cpuMs: number, units: number): number {
  return Number((cpuMs / Math.max(1, units)).toFixed(2));
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** pgbench TPC-B, scale 10, `clients` clients, on a scratch database: tps and latency percentiles. */
function runPgbench(url: string, clients: number, durationS: number): { tps: number; p50_ms: number; p99_ms: number; transactions: number } {
  const init = spawnSync('pgbench', ['-i', '-s', '10', '-q', url], { encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`pgbench -i failed: ${init.stderr}`);
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgbench-'));
  const run = spawnSync(
    'pgbench',
    ['-c', String(clients), '-j', String(Math.min(clients, os.cpus().length)), '-T', String(durationS), '-M', 'prepared', '-l', '--log-prefix', path.join(logDir, 'tx'), url],
    { encoding: 'utf8', cwd: logDir },
  );
  if (run.status !== 0) throw new Error(`pgbench failed: ${run.stderr}`);
  const tps = Number(/tps = ([\d.]+) \(without initial connection time\)/.exec(run.stdout)?.[1] ?? /tps = ([\d.]+)/.exec(run.stdout)?.[1]);
  // Per-transaction log lines: client_id transaction_no time_us script_no time_epoch time_us_of_epoch
  const latencies: number[] = [];
  for (const file of fs.readdirSync(logDir)) {
    for (const line of fs.readFileSync(path.join(logDir, file), 'utf8').split('\n')) {
      const us = Number(line.split(' ')[2]);
      if (Number.isFinite(us) && us > 0) latencies.push(us / 1000);
    }
  }
  fs.rmSync(logDir, { recursive: true, force: true });
  latencies.sort((a, b) => a - b);
  return { tps: Math.round(tps), p50_ms: Number(percentile(latencies, 50).toFixed(2)), p99_ms: Number(percentile(latencies, 99).toFixed(2)), transactions: latencies.length };
}

/**
 * The database's own ceiling for the same transfers: pgbench calls `transfer_create` directly
 * (same function, same prepared-statement protocol, a fresh key per call, senders and recipients
 * drawn as the API run draws them), with no HTTP or Node.js in between. What separates this
 * from the API's rate is the application's own cost per request.
 */
async function runDatabaseOnlyTransfers(knex: Knex, url: string, clients: number, durationS: number): Promise<{ tps: number; transactions: number; postgres_cpu_ms_per_transfer: number }> {
  const transferCreate = await transferCreateScript(knex);
  try {
    const cpuBefore = postgresCpuMs();
    const { tps, transactions } = runPgbenchScript(url, transferCreate.script, clients, durationS);
    return { tps, transactions, postgres_cpu_ms_per_transfer: perUnit(postgresCpuMs() - cpuBefore, transactions) };
  } finally {
    await transferCreate.remove();
  }
}

async function main(): Promise<void> {
  const api = await createScratchDatabase('bench_transfers');
  const tpcb = await createScratchDatabase('bench_pgbench');
  try {
    // Senders with a large XOF balance (funded through the ledger) and a real session each.
    const config = loadConfig({ ...process.env, NODE_ENV: 'production', JWT_SECRET: BENCH_JWT_SECRET, PAY_SECRET: 'bench-pay-secret-bench-pay-secret-0123456', API_KEY_PEPPER: 'bench-api-key-pepper-bench-api-key-pepper-0', SINGLE_INSTANCE: 'true' });
    const sessions = new SessionService(api.knex, new TokenService(config.jwt));
    const run = crypto.randomBytes(3).toString('hex');
    const rows = (await api.knex('users')
      .insert(Array.from({ length: SENDERS }, (_, i) => ({ email: `sender-${run}-${i}@bench.example`, password_hash: 'not-a-login' })))
      .returning(['id', 'email'])) as Array<{ id: string; email: string }>;
    await withTransaction(api.knex, async (trx) => {
      for (const row of rows) await fundWallet(trx, row.id, 'XOF', 1_000_000_000_000n);
    });
    const senders: Sender[] = [];
    for (const row of rows) senders.push({ ...row, token: (await sessions.open({ id: row.id, is_admin: false })).access_token });

    const server = await startServerProcess('scripts/bench/servers/api-server.ts', {
      DATABASE_URL: api.url,
      JWT_SECRET: BENCH_JWT_SECRET,
    });
    let next = 0;
    const request: autocannon.Request = {
      method: 'POST',
      path: '/api/transfers',
      setupRequest: (req) => {
        // Round-robin senders, each to a different user: many wallets, little lock contention.
        const i = next++ % SENDERS;
        const from = senders[i] as Sender;
        const to = senders[(i + 1 + (next % (SENDERS - 1))) % SENDERS] as Sender;
        return {
          ...req,
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${from.token}`,
            'idempotency-key': crypto.randomUUID(),
          },
          body: JSON.stringify({ amount: 1 + (next % 100), currency: 'XOF', recipientIdentifier: to.email }),
        };
      },
    };
    const maxConnections = Number((await api.knex.raw<{ rows: Array<{ max_connections: string }> }>('SHOW max_connections')).rows[0]?.max_connections ?? 100);
    const curve: CurvePoint[] = [];
    let peakRssMb = -1;
    try {
      await runAutocannon({ url: server.url, duration: 3, connections: 32, requests: [request] }); // warm-up
      for (const connections of CONNECTION_LIST) {
        const batchesBefore = await server.batchSizes();
        const cpuBefore = await server.cpuMs();
        const postgresCpuBefore = postgresCpuMs();
        const ours = await runAutocannon({ url: server.url, duration: DURATION_S, connections, requests: [request] });
        const serverCpuMsPerRequest = perUnit((await server.cpuMs()) - cpuBefore, ours.total);
        const postgresCpuMsPerTransfer = perUnit(postgresCpuMs() - postgresCpuBefore, ours.total);
        const batches = batchDistribution(batchesBefore, await server.batchSizes());
        // Within the connections the server has left (the API's pool and other clients hold some).
        const used = Number((await api.knex.raw<{ rows: Array<{ n: string }> }>('SELECT count(*) AS n FROM pg_stat_activity')).rows[0]?.n ?? 0);
        const pgbenchClients = Math.max(1, Math.min(connections, maxConnections - used - 5));
        const postgresCpuBeforePgbench = postgresCpuMs();
        const pgbench = runPgbench(tpcb.url, pgbenchClients, DURATION_S);
        const postgresCpuMsPerTpcb = perUnit(postgresCpuMs() - postgresCpuBeforePgbench, pgbench.transactions);
        // Only transfers that succeeded count (a refused request is cheaper than a transfer).
        const ratio = Number(((ours.requests_per_s * (ours.total - ours.non_2xx - ours.errors)) / Math.max(1, ours.total) / pgbench.tps).toFixed(3));
        curve.push({
          connections,
          ours: { ...ours, server_cpu_ms_per_request: serverCpuMsPerRequest, postgres_cpu_ms_per_transfer: postgresCpuMsPerTransfer },
          batches,
          pgbench_tpcb_scale10: { clients: pgbenchClients, ...pgbench, postgres_cpu_ms_per_transaction: postgresCpuMsPerTpcb },
          ratio_tps: ratio,
        });
      }
      peakRssMb = await server.peakRssMb();
    } finally {
      await server.stop();
    }

    const databaseOnly = await runDatabaseOnlyTransfers(api.knex, api.url, 32, DURATION_S);
    const violations = await reconcile(api.knex);
    const transfers = Number((await api.knex('transfers').count({ n: '*' }).first())?.n ?? 0);
    const at = (connections: number) => curve.find((point) => point.connections === connections);
    const describe = (point: CurvePoint) =>
      `${point.connections} conn: ${point.ratio_tps}x TPC-B (${point.ours.requests_per_s} vs ${point.pgbench_tpcb_scale10.tps}/s), p50 ${point.ours.p50_ms} ms, p99 ${point.ours.p99_ms} ms, ${point.ours.non_2xx + point.ours.errors} errors, mean batch ${point.batches.mean}`;
    const errors = curve.reduce((sum, point) => sum + point.ours.non_2xx + point.ours.errors, 0);
    const targets = [];
    const at32 = at(32);
    if (at32) {
      targets.push({
        benchmark: 'transfers (32 conn)',
        measured: `${describe(at32)}, ${violations.length} violations`,
        target: '>= 0.8x pgbench TPC-B, p99 < 50 ms, 0 errors, 0 violations',
        met: at32.ratio_tps >= 0.8 && at32.ours.p99_ms < 50 && !at32.ours.non_2xx && !at32.ours.errors && !violations.length,
      });
    }
    const at128 = at(128);
    if (at128) {
      targets.push({
        benchmark: 'transfers (128 conn)',
        measured: describe(at128),
        target: '0 errors, p99 < 200 ms',
        met: at128.ours.p99_ms < 200 && !at128.ours.non_2xx && !at128.ours.errors,
      });
    }
    const at1 = at(1);
    if (at1) targets.push({ benchmark: 'transfers (1 conn)', measured: describe(at1), target: 'p50 within 3 ms of before issue 21 (compare by hand)', met: !at1.ours.non_2xx && !at1.ours.errors });
    printResult('transfers', {
      duration_s: DURATION_S,
      senders: SENDERS,
      curve,
      peak_rss_mb: peakRssMb,
      // The same transfers called straight from pgbench (one transfer_create per transaction, 32 clients): the database's ceiling without group commit.
      pgbench_transfer_create: { ...databaseOnly, ratio_to_tpcb_at_32: at32 ? Number((databaseOnly.tps / at32.pgbench_tpcb_scale10.tps).toFixed(3)) : null },
      transfers_recorded: transfers,
      ledger_invariant_violations: violations.length,
      targets,
    });
    if (violations.length || errors) process.exitCode = 1;
  } finally {
    await api.drop();
    await tpcb.drop();
  }
}

interface CurvePoint {
  connections: number;
  ours: LoadResult & { server_cpu_ms_per_request: number; postgres_cpu_ms_per_transfer: number };
  batches: { batches: number; mean: number; p50: number; max: number; failed: number; by_size: Record<string, number> };
  pgbench_tpcb_scale10: { clients: number; tps: number; p50_ms: number; p99_ms: number; transactions: number; postgres_cpu_ms_per_transaction: number };
  ratio_tps: number;
}

/** The batches sent between two readings of the server's counters: how many, their mean, median and largest size, and the count per size. */
function batchDistribution(before: BatchSizes | undefined, after: BatchSizes | undefined): CurvePoint['batches'] {
  const counts = (after?.sizes ?? []).map((n, size) => n - (before?.sizes[size] ?? 0));
  const batches = counts.reduce((sum, n) => sum + n, 0);
  const items = counts.reduce((sum, n, size) => sum + n * size, 0);
  let seen = 0;
  let p50 = 0;
  for (let size = 0; size < counts.length; size += 1) {
    seen += counts[size] ?? 0;
    if (seen * 2 >= batches && batches > 0) {
      p50 = size;
      break;
    }
  }
  const bySize: Record<string, number> = {};
  counts.forEach((n, size) => {
    if (n > 0) bySize[String(size)] = n;
  });
  return {
    batches,
    mean: Number((items / Math.max(1, batches)).toFixed(2)),
    p50,
    max: counts.reduce((max, n, size) => (n > 0 ? size : max), 0),
    failed: (after?.failed ?? 0) - (before?.failed ?? 0),
    by_size: bySize,
  };
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
