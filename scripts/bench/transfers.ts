/**
 * POST /api/transfers (P2P, a fresh Idempotency-Key per request, spread over many sender
 * wallets) against pgbench's built-in TPC-B transaction (scale 10) with the same client
 * count, on the same PostgreSQL server, in the same run: a load curve at 1, 8, 32 and 128
 * connections (BENCH_CONNECTIONS_LIST), each with throughput, p50, p99, errors, CPU per
 * transfer on each side and the group commit's batch size distribution. Then proves
 * the ledger invariants held. Targets: at 32 connections >= 0.8x TPC-B and p99 < 50
 * ms; at 128, 0 errors and p99 < 200 ms; 0 errors and 0 violations everywhere. pgbench's clients
 * are capped to the connections the server has left (128 TPC-B clients need max_connections > 150).
 *
 * Needs PostgreSQL and pgbench: DATABASE_URL, or postgres://postgres@127.0.0.1:5432/postgres.
 * Two scratch databases are created and dropped. The API runs in a child process pinned to
 * core 0 (production settings); autocannon and pgbench run from here (`make bench` pins this
 * script to core 1). BENCH_DURATION_S, BENCH_CONNECTIONS and BENCH_SENDERS override defaults;
 * BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles the API.
 */
import crypto from 'node:crypto';
import type autocannon from 'autocannon';
import type { Knex } from 'knex';
import { reconcile } from '../../src/modules/ledger';
import {
  batchDistribution,
  benchUsers,
  BENCH_JWT_SECRET,
  perUnit,
  runPgbench,
  createScratchDatabase,
  postgresCpuMs,
  printResult,
  runAutocannon,
  runPgbenchScript,
  startServerProcess,
  transferScript,
  type BatchDistribution,
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

/**
 * The database's own ceiling for the same transfers: pgbench sends the statements of a transfer
 * alone in its window (the session's check, the parties' read, write_apply_batch; the same
 * prepared-statement protocol, a fresh key per call, senders and recipients drawn as the API
 * run draws them), with no HTTP or Node.js in between. What separates this from the API's rate
 * is the application's own cost per request (and the windows it groups).
 */
async function runDatabaseOnlyTransfers(knex: Knex, url: string, clients: number, durationS: number): Promise<{ tps: number; transactions: number; postgres_cpu_ms_per_transfer: number }> {
  const transfer = await transferScript(knex);
  try {
    const cpuBefore = postgresCpuMs();
    const { tps, transactions } = runPgbenchScript(url, transfer.script, clients, durationS);
    return { tps, transactions, postgres_cpu_ms_per_transfer: perUnit(postgresCpuMs() - cpuBefore, transactions) };
  } finally {
    await transfer.remove();
  }
}

async function main(): Promise<void> {
  const api = await createScratchDatabase('bench_transfers');
  const tpcb = await createScratchDatabase('bench_pgbench');
  try {
    // Senders with a large XOF balance (funded through the ledger) and a real session each.
    const senders: Sender[] = await benchUsers(api.knex, SENDERS, 'sender');

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
    if (at1) targets.push({ benchmark: 'transfers (1 conn)', measured: describe(at1), target: 'p50 within 3 ms of one transfer per transaction, no group commit (compare by hand)', met: !at1.ours.non_2xx && !at1.ours.errors });
    printResult('transfers', {
      duration_s: DURATION_S,
      senders: SENDERS,
      curve,
      peak_rss_mb: peakRssMb,
      // The same transfers' statements straight from pgbench (one transfer per window, 32 clients): the database's ceiling without group commit.
      pgbench_transfer: { ...databaseOnly, ratio_to_tpcb_at_32: at32 ? Number((databaseOnly.tps / at32.pgbench_tpcb_scale10.tps).toFixed(3)) : null },
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
  batches: BatchDistribution;
  pgbench_tpcb_scale10: { clients: number; tps: number; p50_ms: number; p99_ms: number; transactions: number; postgres_cpu_ms_per_transaction: number };
  ratio_tps: number;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
