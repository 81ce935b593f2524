/**
 * Tontine contributions: POST /api/tontines/{id}/contributions (a fresh
 * Idempotency-Key each) over many active tontines of MEMBERS members, against pgbench's TPC-B
 * transaction (scale 10) with the same client count, on the same PostgreSQL server, in the same
 * run; then proves the ledger invariants held. Requests go cycle by cycle (every member of every
 * tontine pays cycle 1, then cycle 2...), so a cycle is always open when its contributions
 * arrive; the last contribution of a cycle also pays the pot out in its transaction (one
 * request in MEMBERS makes two postings). Target: >= 0.4x TPC-B at 32 connections, 0 errors,
 * 0 violations.
 *
 * Needs PostgreSQL and pgbench (DATABASE_URL, or postgres://postgres@127.0.0.1:5432/postgres).
 * The tontines are created, joined and started through the API before the load
 * (BENCH_TONTINES, by default enough for 1500 contributions per second of load, so a faster run
 * never runs out: each contribution that finds none left answers 409 and counts as an error).
 * BENCH_DURATION_S and BENCH_CONNECTIONS override the defaults.
 */
import crypto from 'node:crypto';
import type autocannon from 'autocannon';
import { reconcile } from '../../src/modules/ledger';
import { apiPost, benchUsers, BENCH_JWT_SECRET, createScratchDatabase, inParallel, postingsAgainstTpcb, printResult, startServerProcess } from './bench-support';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const MEMBERS = 5;
/** Each tontine offers MEMBERS x MEMBERS contributions (every member, every cycle). */
const TONTINES = Number(process.env.BENCH_TONTINES ?? Math.ceil((DURATION_S * 1500) / (MEMBERS * MEMBERS)));

async function main(): Promise<void> {
  const api = await createScratchDatabase('bench_tontines');
  const tpcb = await createScratchDatabase('bench_pgbench');
  try {
    const users = await benchUsers(api.knex, TONTINES * MEMBERS, 'tontine-member');
    const server = await startServerProcess('scripts/bench/servers/api-server.ts', { DATABASE_URL: api.url, JWT_SECRET: BENCH_JWT_SECRET });
    try {
      const created = Date.now();
      // Tontine t: members t*MEMBERS .. t*MEMBERS + MEMBERS - 1, the first organizes it.
      const tontines = await inParallel(Array.from({ length: TONTINES }, (_, t) => t), 16, async (t) => {
        const members = users.slice(t * MEMBERS, (t + 1) * MEMBERS);
        const organizer = members[0] as (typeof users)[number];
        const url = `${server.url}/api/tontines`;
        const tontine = await apiPost(url, organizer.token, { name: `Bench circle ${t}`, currency: 'XOF', contribution_amount: 1000, frequency: 'weekly', max_members: MEMBERS, payout_order: 'join_order' });
        for (const member of members.slice(1)) {
          await apiPost(`${url}/${tontine.id}/invitations`, organizer.token, { identifier: member.email });
          await apiPost(`${url}/${tontine.id}/join`, member.token);
        }
        await apiPost(`${url}/${tontine.id}/start`, organizer.token);
        return { id: tontine.id, members };
      });
      const setupMs = Date.now() - created;
      // Cycle by cycle, member by member, tontine by tontine: a tontine's next contribution comes TONTINES requests later.
      const contributions = Array.from({ length: MEMBERS * MEMBERS * TONTINES }, (_, n) => {
        const tontine = tontines[n % TONTINES] as (typeof tontines)[number];
        const member = tontine.members[Math.floor(n / TONTINES) % MEMBERS] as (typeof users)[number];
        return { tontineId: tontine.id, token: member.token, cycle: 1 + Math.floor(n / (TONTINES * MEMBERS)) };
      });
      let next = 0;
      const contribute: autocannon.Request = {
        method: 'POST',
        setupRequest: (req) => {
          const contribution = contributions[next++ % contributions.length] as (typeof contributions)[number];
          return {
            ...req,
            path: `/api/tontines/${contribution.tontineId}/contributions`,
            headers: { 'content-type': 'application/json', authorization: `Bearer ${contribution.token}`, 'idempotency-key': crypto.randomUUID() },
            body: JSON.stringify({ cycle: contribution.cycle }),
          };
        },
      };
      const point = await postingsAgainstTpcb(server, api.knex, tpcb.url, [contribute], CONNECTIONS, DURATION_S);
      const peakRssMb = await server.peakRssMb();
      const payouts = Number((await api.knex('postings').where({ kind: 'tontine.payout' }).count<Array<{ n: string }>>({ n: '*' }))[0]?.n ?? 0);
      const violations = await reconcile(api.knex);
      const errors = point.ours.non_2xx + point.ours.errors;
      const exhausted = next > contributions.length;
      printResult('tontines', {
        duration_s: DURATION_S,
        tontines: TONTINES,
        members_each: MEMBERS,
        setup_ms: setupMs,
        payouts,
        ran_out_of_contributions: exhausted,
        point,
        peak_rss_mb: peakRssMb,
        ledger_invariant_violations: violations.length,
        targets: [
          {
            benchmark: `tontine contributions (${CONNECTIONS} conn)`,
            measured: `${point.ratio_tps}x TPC-B (${point.ours.requests_per_s} vs ${point.pgbench_tpcb_scale10.tps}/s), p99 ${point.ours.p99_ms} ms, ${errors} errors, ${violations.length} violations`,
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
