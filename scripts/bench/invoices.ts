/**
 * GET /business/organizations/{orgId}/invoices?limit=50 on an organisation with 100,000
 * documents: requests per second and latency percentiles with autocannon, first page and a
 * deep page (starting_after in the middle), against the health route of the same server in
 * the same run (target: at least 0.2x its requests/s, p99 under 60 ms), and the query plan of the list query (it must
 * be an index scan of documents_list_index, never a sort of the organisation's rows).
 *
 * Needs PostgreSQL: DATABASE_URL, or postgres://postgres@127.0.0.1:5432/postgres. A scratch
 * database is created, filled with set-based SQL, and dropped at the end. The API runs in a
 * child process pinned to core 0 (production settings), autocannon here (`make bench` pins
 * this script to core 1). BENCH_DOCUMENTS, BENCH_DURATION_S and BENCH_CONNECTIONS override
 * the defaults.
 */
import type { Knex } from 'knex';
import { documentListStatement } from '../../src/modules/invoices';
import { printResult, runAutocannon, startServerProcess, BENCH_JWT_SECRET, createBenchMember, createScratchDatabase } from './bench-support';

const DOCUMENTS = Number(process.env.BENCH_DOCUMENTS ?? 100_000);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);

/** 100 customers, then the documents in one INSERT ... SELECT over generate_series. */
async function fill(knex: Knex, orgId: string): Promise<void> {
  await knex.raw(
    `INSERT INTO customers (organization_id, name, email)
     SELECT ?, 'Customer ' || c, 'customer' || c || '@bench.example' FROM generate_series(1, 100) c`,
    [orgId],
  );
  // 80 % invoices (all five statuses), 15 % quotes (draft, open, canceled), 5 % credit notes
  // against one issued invoice; newest created last; amounts in XOF minor units.
  await knex.raw(
    `WITH customer_ids AS (
       SELECT array_agg(id ORDER BY name) AS ids FROM customers WHERE organization_id = :org
     ), anchor AS (
       INSERT INTO documents (organization_id, kind, status, number, currency, line_items, subtotal_minor, tax_minor, total_minor, issue_date, created_at)
       VALUES (:org, 'invoice', 'paid', 'INV-2025-999999', 'XOF', '[]', 100000000, 0, 100000000, now()::date, now() - interval '400 days')
       RETURNING id
     ), rows AS (
       SELECT g,
              CASE WHEN g % 20 < 16 THEN 'invoice' WHEN g % 20 < 19 THEN 'quote' ELSE 'credit_note' END AS kind
         FROM generate_series(1, :n) g
     ), shaped AS (
       SELECT g, kind,
              CASE kind
                WHEN 'invoice' THEN (ARRAY['draft', 'open', 'paid', 'void', 'uncollectible'])[1 + g % 5]
                WHEN 'quote' THEN (ARRAY['draft', 'open', 'canceled'])[1 + g % 3]
                ELSE 'issued' END AS status,
              (1000 + (g % 97) * 500)::bigint AS subtotal
         FROM rows
     )
     INSERT INTO documents (organization_id, kind, status, number, customer_id, currency, line_items,
                            subtotal_minor, tax_minor, total_minor, issue_date, due_date, invoice_id, credit_reason, created_at)
     SELECT :org, s.kind, s.status,
            CASE WHEN s.status = 'draft' THEN NULL
                 ELSE (CASE s.kind WHEN 'invoice' THEN 'INV' WHEN 'quote' THEN 'QUO' ELSE 'CN' END) || '-2026-' || lpad(s.g::text, 6, '0') END,
            (SELECT ids[1 + s.g % 100] FROM customer_ids),
            'XOF',
            jsonb_build_array(jsonb_build_object('description', 'Item ' || s.g, 'quantity', 1, 'unit_amount_minor', s.subtotal::text,
                                                 'tax_rate_bps', 1800, 'amount_minor', s.subtotal::text, 'tax_minor', (s.subtotal * 18 / 100)::text)),
            s.subtotal, s.subtotal * 18 / 100, s.subtotal + s.subtotal * 18 / 100,
            CASE WHEN s.status = 'draft' THEN NULL ELSE (now() - s.g * interval '1 minute')::date END,
            CASE WHEN s.kind = 'invoice' AND s.status <> 'draft' THEN (now() + interval '30 days')::date END,
            CASE WHEN s.kind = 'credit_note' THEN (SELECT id FROM anchor) END,
            CASE WHEN s.kind = 'credit_note' THEN 'duplicate' END,
            now() - interval '300 days' + s.g * interval '1 minute' / 4
       FROM shaped s`,
    { org: orgId, n: DOCUMENTS - 1 },
  );
  await knex.raw('ANALYZE documents; ANALYZE customers');
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** EXPLAIN ANALYZE of the exact statement the list runs (documentListStatement). */
async function explainList(knex: Knex, orgId: string, startingAfter?: string): Promise<Record<string, unknown>> {
  const statement = documentListStatement({ organizationId: orgId, asOf: new Date(), limit: 50, startingAfter });
  const client = knex.client as { acquireConnection(): Promise<unknown>; releaseConnection(connection: unknown): Promise<unknown> };
  const connection = (await client.acquireConnection()) as { query(text: string, values: unknown[]): Promise<{ rows: Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode; 'Execution Time': number }> }> }> };
  let result;
  try {
    result = await connection.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`, statement.values);
  } finally {
    await client.releaseConnection(connection);
  }
  const top = result.rows[0]?.['QUERY PLAN'][0];
  const all = top ? nodes(top.Plan) : [];
  const indexes = [...new Set(all.map((n) => n['Index Name']).filter(Boolean))];
  return {
    node_types: [...new Set(all.map((n) => n['Node Type']))],
    indexes,
    uses_list_index: indexes.includes('documents_list_index'),
    sorts: all.some((n) => n['Node Type'] === 'Sort'),
    seq_scan_of_documents: all.some((n) => n['Node Type'] === 'Seq Scan'),
    execution_ms: top?.['Execution Time'],
  };
}

async function main(): Promise<void> {
  const scratch = await createScratchDatabase('bench_invoices');
  const { knex, url } = scratch;
  let server: Awaited<ReturnType<typeof startServerProcess>> | undefined;
  try {
    const { orgId, token } = await createBenchMember(knex, 'invoices');

    const fillStarted = Date.now();
    await fill(knex, orgId);
    const fillMs = Date.now() - fillStarted;
    const count = Number((await knex('documents').where({ organization_id: orgId }).count<Array<{ count: string }>>('* as count'))[0]?.count);


    const middle = (await knex('documents').where({ organization_id: orgId }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).offset(Math.floor(count / 2)).first('id')) as { id: string };
    const plans = { first_page: await explainList(knex, orgId), deep_page: await explainList(knex, orgId, middle.id) };

    server = await startServerProcess('scripts/bench/servers/api-server.ts', { DATABASE_URL: url, JWT_SECRET: BENCH_JWT_SECRET, REDIS_URL: '' });
    const headers = { authorization: `Bearer ${token}` };
    const first = `${server.url}/api/business/organizations/${orgId}/invoices?limit=50`;
    const deep = `${first}&starting_after=${middle.id}`;
    const probe = await fetch(first, { headers });
    const body = (await probe.json()) as { data?: { data?: unknown[]; has_more?: boolean } };
    if (probe.status !== 200 || body.data?.data?.length !== 50 || !body.data.has_more) throw new Error(`unexpected answer ${probe.status}: ${JSON.stringify(body).slice(0, 300)}`);

    await runAutocannon({ url: first, headers, duration: 2, connections: CONNECTIONS });
    // The health route of the same server, in the same run: the yardstick of the ratio.
    const health = `${server.url}/api/health`;
    await runAutocannon({ url: health, duration: 2, connections: CONNECTIONS });
    const healthResult = await runAutocannon({ url: health, duration: DURATION_S, connections: CONNECTIONS });
    const firstResult = await runAutocannon({ url: first, headers, duration: DURATION_S, connections: CONNECTIONS });
    const deepResult = await runAutocannon({ url: deep, headers, duration: DURATION_S, connections: CONNECTIONS });
    const ratio = Number((firstResult.requests_per_s / Math.max(1, healthResult.requests_per_s)).toFixed(3));
    printResult('invoices', {
      documents: count,
      fill_ms: fillMs,
      connections: CONNECTIONS,
      duration_s: DURATION_S,
      health: healthResult,
      list_limit_50: firstResult,
      list_limit_50_deep_page: deepResult,
      ratio_rps_vs_health: ratio,
      server_peak_rss_mb: await server.peakRssMb(),
      explain: plans,
      targets: [
        {
          benchmark: 'invoices',
          measured: `${ratio}x health, p99 ${firstResult.p99_ms} ms`,
          target: '>= 0.2x health, p99 < 60 ms',
          met: ratio >= 0.2 && firstResult.p99_ms < 60 && firstResult.non_2xx === 0 && firstResult.errors === 0,
        },
      ],
    });
    if (!plans.first_page.uses_list_index || plans.first_page.sorts) throw new Error('the list query does not use documents_list_index');
  } finally {
    await server?.stop();
    await scratch.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
