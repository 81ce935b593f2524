/**
 * Escrow fund-then-accept: each autocannon connection takes the next escrow
 * awaiting funding, POSTs /api/escrows/{id}/fund then /accept as its buyer (a fresh
 * Idempotency-Key each), against pgbench's TPC-B transaction (scale 10) with the same client
 * count, on the same PostgreSQL server, in the same run; then proves the ledger invariants held.
 * Each request is one database transaction with one posting (the funding; the settlement to the
 * seller and the fee account), so the ratio compares money requests per second with TPC-B
 * transactions per second; escrows settled per second are half the requests. Target: >= 0.4x
 * TPC-B at 32 connections, 0 errors, 0 violations.
 *
 * Needs PostgreSQL and pgbench (DATABASE_URL, or postgres://postgres@127.0.0.1:5432/postgres).
 * The escrows are created through the API before the load (BENCH_ESCROWS, by default 400 per
 * second of load: enough for about 800 requests/s). BENCH_DURATION_S, BENCH_CONNECTIONS and
 * BENCH_PARTIES override the defaults.
 */
import crypto from 'node:crypto';
import type autocannon from 'autocannon';
import { ensureAccounts, PLATFORM_SHARDS, reconcile, type AccountIdentity } from '../../src/modules/ledger';
import { apiPost, benchUsers, BENCH_JWT_SECRET, createScratchDatabase, inParallel, postingsAgainstTpcb, printResult, startServerProcess } from './bench-support';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const PARTIES = Number(process.env.BENCH_PARTIES ?? 256);
const ESCROWS = Number(process.env.BENCH_ESCROWS ?? DURATION_S * 400);
/**
 * The platform's holding and fee shards (2 x 256 accounts per currency) are created on their
 * first use, once in the platform's life; a service that has run a few thousand escrows has them
 * all. The benchmark measures that steady state, as the transfers' measures wallets that exist:
 * it creates them before the load. BENCH_COLD_SHARDS=1 leaves them to the load (a first deploy).
 */
const COLD_SHARDS = process.env.BENCH_COLD_SHARDS === '1';

async function main(): Promise<void> {
  const api = await createScratchDatabase('bench_escrows');
  const tpcb = await createScratchDatabase('bench_pgbench');
  try {
    const parties = await benchUsers(api.knex, PARTIES, 'escrow-party');
    const server = await startServerProcess('scripts/bench/servers/api-server.ts', { DATABASE_URL: api.url, JWT_SECRET: BENCH_JWT_SECRET });
    let point;
    let peakRssMb = -1;
    try {
      // Escrow i: party i buys from party i + 1 (many wallets, little lock contention).
      const created = Date.now();
      const escrows = await inParallel(Array.from({ length: ESCROWS }, (_, i) => i), 16, async (i) => {
        const buyer = parties[i % PARTIES] as (typeof parties)[number];
        const seller = parties[(i + 1) % PARTIES] as (typeof parties)[number];
        const escrow = await apiPost(`${server.url}/api/escrows`, buyer.token, {
          role: 'buyer',
          counterparty_identifier: seller.email,
          amount: 1000 + (i % 100),
          currency: 'XOF',
          description: 'Bench escrow',
        });
        return { id: escrow.id, token: buyer.token };
      });
      const createMs = Date.now() - created;
      if (!COLD_SHARDS) {
        const shards = (['escrow_holding', 'fees'] as const).flatMap((kind) =>
          Array.from({ length: PLATFORM_SHARDS }, (_, n): AccountIdentity => ({ ownerType: 'platform', ownerId: null, currency: 'XOF', kind, externalRef: `shard-${n}` })),
        );
        await ensureAccounts(api.knex, shards);
      }
      let next = 0;
      const step = (action: 'fund' | 'accept'): autocannon.Request => ({
        method: 'POST',
        setupRequest: (req, context) => {
          const ctx = context as { escrow?: (typeof escrows)[number] };
          if (action === 'fund') ctx.escrow = escrows[next++ % escrows.length];
          const escrow = ctx.escrow as (typeof escrows)[number];
          return {
            ...req,
            path: `/api/escrows/${escrow.id}/${action}`,
            headers: { 'content-type': 'application/json', authorization: `Bearer ${escrow.token}`, 'idempotency-key': crypto.randomUUID() },
            body: '{}',
          };
        },
      });
      point = await postingsAgainstTpcb(server, api.knex, tpcb.url, [step('fund'), step('accept')], CONNECTIONS, DURATION_S);
      peakRssMb = await server.peakRssMb();
      const settled = Number((await api.knex('escrows').where({ status: 'released' }).count<Array<{ n: string }>>({ n: '*' }))[0]?.n ?? 0);
      const violations = await reconcile(api.knex);
      const errors = point.ours.non_2xx + point.ours.errors;
      const exhausted = next > escrows.length;
      printResult('escrows', {
        duration_s: DURATION_S,
        escrows_created: escrows.length,
        create_ms: createMs,
        platform_shards: COLD_SHARDS ? 'created on first use, during the load' : 'created before the load',
        // Released by the end (requests still in flight when the load stopped included).
        escrows_released: settled,
        escrows_per_s: Number((point.ours.requests_per_s / 2).toFixed(1)),
        ran_out_of_escrows: exhausted,
        point,
        peak_rss_mb: peakRssMb,
        ledger_invariant_violations: violations.length,
        targets: [
          {
            benchmark: `escrows fund+accept (${CONNECTIONS} conn)`,
            measured: `${point.ratio_tps}x TPC-B (${point.ours.requests_per_s} requests/s, ${(point.ours.requests_per_s / 2).toFixed(0)} escrows/s, vs ${point.pgbench_tpcb_scale10.tps}/s), p99 ${point.ours.p99_ms} ms, ${errors} errors, ${violations.length} violations`,
            target: '>= 0.4x pgbench TPC-B, 0 errors, 0 violations',
            met: point.ratio_tps >= 0.4 && errors === 0 && violations.length === 0 && !exhausted,
          },
        ],
      });
      if (violations.length || errors) process.exitCode = 1;
    } finally {
      await server.stop();
    }
  } finally {
    await api.drop();
    await tpcb.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
