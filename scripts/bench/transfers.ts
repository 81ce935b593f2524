/**
 * POST /api/transfers (P2P, a fresh Idempotency-Key per request, spread over many sender
 * wallets) against pgbench's built-in TPC-B transaction (scale 10) with the same client
 * count, on the same PostgreSQL server, in the same run. Prints both throughputs, their
 * ratio, p50/p99 latencies and the API's peak RSS, then proves the ledger invariants held.
 * Target (issues 4 and 12): at least 0.5 of pgbench's transactions per second, p99 under 50 ms.
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
import { BENCH_JWT_SECRET, createScratchDatabase, postgresCpuMs, printResult, runAutocannon, runPgbenchScript, startServerProcess, transferCreateScript } from './bench-support';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
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
    const config = loadConfig({ ...process.env, NODE_ENV: 'production', JWT_SECRET: BENCH_JWT_SECRET, PAY_SECRET: 'bench-pay-secret-bench-pay-secret-0123456', SINGLE_INSTANCE: 'true' });
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
    let ours;
    let peakRssMb = -1;
    let serverCpuMsPerRequest = -1;
    let postgresCpuMsPerTransfer = -1;
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
    try {
      await runAutocannon({ url: server.url, duration: 3, connections: CONNECTIONS, requests: [request] }); // warm-up
      const cpuBefore = await server.cpuMs();
      const postgresCpuBefore = postgresCpuMs();
      ours = await runAutocannon({ url: server.url, duration: DURATION_S, connections: CONNECTIONS, requests: [request] });
      serverCpuMsPerRequest = perUnit((await server.cpuMs()) - cpuBefore, ours.total);
      postgresCpuMsPerTransfer = perUnit(postgresCpuMs() - postgresCpuBefore, ours.total);
      peakRssMb = await server.peakRssMb();
    } finally {
      await server.stop();
    }
    const postgresCpuBeforePgbench = postgresCpuMs();
    const pgbench = runPgbench(tpcb.url, CONNECTIONS, DURATION_S);
    const postgresCpuMsPerTpcb = perUnit(postgresCpuMs() - postgresCpuBeforePgbench, pgbench.transactions);

    const databaseOnly = await runDatabaseOnlyTransfers(api.knex, api.url, CONNECTIONS, DURATION_S);
    const violations = await reconcile(api.knex);
    // Only transfers that succeeded count (a refused request is cheaper than a transfer).
    const ratio = Number(((ours.requests_per_s * (ours.total - ours.non_2xx - ours.errors)) / Math.max(1, ours.total) / pgbench.tps).toFixed(3));
    const transfers = Number((await api.knex('transfers').count({ n: '*' }).first())?.n ?? 0);
    printResult('transfers', {
      connections: CONNECTIONS,
      duration_s: DURATION_S,
      senders: SENDERS,
      ours: { ...ours, peak_rss_mb: peakRssMb, server_cpu_ms_per_request: serverCpuMsPerRequest, postgres_cpu_ms_per_transfer: postgresCpuMsPerTransfer },
      pgbench_tpcb_scale10: { ...pgbench, postgres_cpu_ms_per_transaction: postgresCpuMsPerTpcb },
      // The same transfers called straight from pgbench: the database's ceiling for the API.
      pgbench_transfer_create: { ...databaseOnly, ratio_to_tpcb: Number((databaseOnly.tps / pgbench.tps).toFixed(3)) },
      ratio_tps: ratio,
      target_ratio: 0.5,
      target_p99_ms: 50,
      transfers_recorded: transfers,
      ledger_invariant_violations: violations.length,
      targets: [
        {
          benchmark: 'transfers',
          measured: `${ratio}x pgbench (${ours.requests_per_s} vs ${pgbench.tps}/s), p99 ${ours.p99_ms} ms, ${ours.non_2xx + ours.errors} errors, ${violations.length} violations`,
          target: '>= 0.5x pgbench TPC-B, p99 < 50 ms, 0 errors, 0 violations',
          met: ratio >= 0.5 && ours.p99_ms < 50 && !ours.non_2xx && !ours.errors && !violations.length,
        },
      ],
    });
    if (violations.length || ours.non_2xx || ours.errors) process.exitCode = 1;
  } finally {
    await api.drop();
    await tpcb.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
