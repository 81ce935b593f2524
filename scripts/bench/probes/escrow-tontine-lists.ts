/**
 * A probe, not a benchmark (`make bench` does not run it): GET
 * /api/escrows?limit=50 and GET /api/tontines?limit=50 for one user who is party to many
 * escrows (PROBE_ESCROWS, as buyer and as seller) and member of many tontines
 * (PROBE_TONTINES), all made through the API. Prints the query plan of each list query (captured
 * from knex) and, per list, requests/s, p50, p99 and the API's CPU per request from /proc.
 * `BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof"` profiles the API.
 * `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx scripts/bench/probes/escrow-tontine-lists.ts`
 */
import type { Knex } from 'knex';
import { apiPost, benchUsers, BENCH_JWT_SECRET, createScratchDatabase, inParallel, perUnit, printResult, runAutocannon, startServerProcess } from '../bench-support';

const ESCROWS = Number(process.env.PROBE_ESCROWS ?? 1_000);
const TONTINES = Number(process.env.PROBE_TONTINES ?? 100);
const SECONDS = Number(process.env.PROBE_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);

/**
 * EXPLAIN ANALYZE, as the owner, of the SQL the two list queries send (the shapes the
 * repositories build with knex, first page, no filter): whether they read an index in
 * order or sort all of the owner's rows.
 */
async function plansOf(knex: Knex, ownerId: string): Promise<Array<{ list: string; plan: string[] }>> {
  const plans: Array<{ list: string; plan: string[] }> = [];
  for (const [list, sql] of [
    ['escrows of a party (buyer or seller)', `SELECT e.* FROM escrows e WHERE (e.buyer_user_id = ? OR e.seller_user_id = ?) ORDER BY e.created_at DESC, e.id DESC LIMIT 51`],
    [
      'tontines of a member',
      `SELECT t.*, m.role, (SELECT count(*)::int FROM tontine_members a WHERE a.tontine_id = t.id) AS member_count,
         (SELECT c.due_at FROM tontine_cycles c WHERE c.tontine_id = t.id AND c.number = t.current_cycle AND t.status = 'active') AS current_due_at
         FROM tontines t JOIN tontine_members m ON m.tontine_id = t.id WHERE m.user_id = ? ORDER BY t.created_at DESC, t.id DESC LIMIT 51`,
    ],
  ] as const) {
    const bindings = sql.split('?').length === 3 ? [ownerId, ownerId] : [ownerId];
    const result = await knex.raw<{ rows: Array<{ 'QUERY PLAN': string }> }>(`EXPLAIN (ANALYZE) ${sql}`, bindings);
    plans.push({ list, plan: result.rows.map((row) => row['QUERY PLAN']) });
  }
  return plans;
}

async function main(): Promise<void> {
  const db = await createScratchDatabase('probe_lists');
  try {
    const [owner] = await benchUsers(db.knex, 1, 'list-owner');
    const others = await benchUsers(db.knex, 8, 'list-other');
    const server = await startServerProcess('scripts/bench/servers/api-server.ts', { DATABASE_URL: db.url, JWT_SECRET: BENCH_JWT_SECRET });
    try {
      const me = owner as NonNullable<typeof owner>;
      await inParallel(Array.from({ length: ESCROWS }, (_, i) => i), 16, async (i) => {
        const other = others[i % others.length] as (typeof others)[number];
        const [creator, counterparty, role] = i % 2 === 0 ? [me, other, 'buyer'] : [other, me, 'seller'];
        await apiPost(`${server.url}/api/escrows`, creator.token, { role, counterparty_identifier: counterparty.email, amount: 1000 + i, currency: 'XOF', description: 'Probe escrow' });
      });
      await inParallel(Array.from({ length: TONTINES }, (_, t) => t), 8, async (t) => {
        const tontine = await apiPost(`${server.url}/api/tontines`, me.token, { name: `Probe circle ${t}`, currency: 'XOF', contribution_amount: 1000, frequency: 'weekly', max_members: 5, payout_order: 'join_order' });
        const member = others[t % others.length] as (typeof others)[number];
        await apiPost(`${server.url}/api/tontines/${tontine.id}/invitations`, me.token, { identifier: member.email });
        await apiPost(`${server.url}/api/tontines/${tontine.id}/join`, member.token);
      });
      await db.knex.raw('ANALYZE');
      const headers = { authorization: `Bearer ${me.token}` };
      const measure = async (path: string) => {
        await runAutocannon({ url: `${server.url}${path}`, headers, duration: 2, connections: CONNECTIONS });
        const before = await server.cpuMs();
        const result = await runAutocannon({ url: `${server.url}${path}`, headers, duration: SECONDS, connections: CONNECTIONS });
        return { ...result, server_cpu_ms_per_request: perUnit((await server.cpuMs()) - before, result.total) };
      };
      const health = await measure('/api/health');
      const escrows = await measure('/api/escrows?limit=50');
      const tontines = await measure('/api/tontines?limit=50');
      printResult('escrow-tontine-lists', {
        escrows: ESCROWS,
        tontines: TONTINES,
        health,
        escrows_list: { ...escrows, ratio_rps_vs_health: Number((escrows.requests_per_s / Math.max(1, health.requests_per_s)).toFixed(3)) },
        tontines_list: { ...tontines, ratio_rps_vs_health: Number((tontines.requests_per_s / Math.max(1, health.requests_per_s)).toFixed(3)) },
        plans: await plansOf(db.knex, me.id),
      });
    } finally {
      await server.stop();
    }
  } finally {
    await db.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
