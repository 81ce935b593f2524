import type { Knex } from 'knex';
import type { Client } from 'pg';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, createMember, createOrgAccount, createOrganization, type TestOrgAccount } from '../support/factories';
import { bulkCredit } from '../support/org-account-postings';
import { statementUrl } from '../support/statements';

/**
 * A JSON statement page never sums the account's whole history before `from` (checkpoints).
 * What a page costs is measured here as the rows of `entries` its queries read (each query
 * the app sent is run again under EXPLAIN ANALYZE): for the same week of activity, an
 * account five years old must cost what an account one week old costs.
 */
const HOUR = 3_600_000;
const STEP = 6 * HOUR;
const FIVE_YEARS = 5 * 365 * 4; // one entry every six hours
const ONE_WEEK = 7 * 4;

let app: App;
let token: string;
let orgId: string;
let old: TestOrgAccount;
let young: TestOrgAccount;
let from: Date;
let to: Date;

beforeAll(async () => {
  app = await buildTestApp();
  const org = await createOrganization();
  orgId = org.id;
  token = await accessTokenFor(app, await createMember(org, 'finance_manager'));
  [old, young] = [await createOrgAccount(org, { currency: 'XOF' }), await createOrgAccount(org, { currency: 'XOF' })];
  // Both end six hours ago on the same six-hour grid: the last week is the same for both.
  const end = Math.floor(Date.now() / STEP) * STEP - STEP;
  await bulkCredit(old, FIVE_YEARS, { start: new Date(end - (FIVE_YEARS - 1) * STEP), stepMs: STEP, amountMinor: 2n, chunk: 1000 });
  await bulkCredit(young, ONE_WEEK, { start: new Date(end - (ONE_WEEK - 1) * STEP), stepMs: STEP, amountMinor: 2n });
  from = new Date(end - 3 * 24 * HOUR - 90 * 60_000);
  to = new Date(end - 2 * 24 * HOUR + 90 * 60_000);
}, 300_000);

interface PlanNode {
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}

function entriesRows(node: PlanNode): number {
  const own = node['Relation Name'] === 'entries' ? (node['Actual Rows'] ?? 0) * (node['Actual Loops'] ?? 1) : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + entriesRows(child), 0);
}

/** Runs `work`, then each SELECT it sent that reads `entries` again under EXPLAIN ANALYZE: the rows of entries they read. */
async function entriesRead(work: () => Promise<void>): Promise<number> {
  const knex = testKnex();
  const queries: Array<{ sql: string; bindings: unknown[] }> = [];
  const listen = (query: { sql: string; bindings?: unknown[] }) => {
    if (/\bentries\b/.test(query.sql) && /^\s*\(?\s*select/i.test(query.sql)) queries.push({ sql: query.sql, bindings: query.bindings ?? [] });
  };
  knex.on('query', listen);
  try {
    await work();
  } finally {
    knex.off('query', listen);
  }
  expect(queries.length).toBeGreaterThan(0);
  const client = knex.client as Knex.Client & { acquireConnection(): Promise<Client>; releaseConnection(c: Client): Promise<void>; positionBindings(sql: string): string };
  const connection = await client.acquireConnection();
  try {
    let rows = 0;
    for (const query of queries) {
      const text = query.sql.includes('$1') ? query.sql : client.positionBindings(query.sql);
      const result = await connection.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, query.bindings as unknown[]);
      const plan = (result.rows[0] as { 'QUERY PLAN': Array<{ Plan: PlanNode }> })['QUERY PLAN'][0] as { Plan: PlanNode };
      rows += entriesRows(plan.Plan);
    }
    return rows;
  } finally {
    await client.releaseConnection(connection);
  }
}

/** The first page (limit 3) and the page after it; their bodies. */
async function twoPages(account: TestOrgAccount): Promise<[string, string]> {
  const first = await request(app).get(statementUrl(orgId, account.id, { from, to, limit: 3 })).set(bearer(token));
  expect(first.status, first.text).toBe(200);
  const next = await request(app)
    .get(statementUrl(orgId, account.id, { from, to, limit: 3, starting_after: first.body.data.next_cursor as string }))
    .set(bearer(token));
  expect(next.status, next.text).toBe(200);
  return [first.text, next.text];
}

async function sumBefore(account: TestOrgAccount, before: Date): Promise<bigint> {
  const row = (await testKnex()('entries').where('account_id', account.ledgerAccountId).andWhere('created_at', '<', before).first(testKnex().raw('coalesce(sum(amount_minor), 0) AS total'))) as { total: string };
  return BigInt(row.total);
}

describe('a JSON statement page', () => {
  it('costs the same for an account five years old as for one a week old (rows of entries read)', { timeout: 300_000 }, async () => {
    // The first read of a day may compute its checkpoint (once); what is measured is a page as
    // every later reader gets it.
    const warm = { old: await twoPages(old), young: await twoPages(young) };
    let again: [string, string] = ['', ''];
    const oldCost = await entriesRead(async () => {
      again = await twoPages(old);
    });
    const youngCost = await entriesRead(async () => {
      await twoPages(young);
    });
    console.log(JSON.stringify({ entries_read_five_years: oldCost, entries_read_one_week: youngCost, history_entries: FIVE_YEARS }));
    expect(oldCost).toBeLessThanOrEqual(youngCost + 8);
    // Same bytes from a stored checkpoint as from the one computed on the first read.
    expect(again).toEqual(warm.old);

    // And the numbers are the ledger's: opening = every entry before `from`, closing = before `to`.
    const page = JSON.parse(warm.old[0]) as { data: { opening_balance: string; closing_balance: string; entry_count: number; total_credits: string } };
    const opening = await sumBefore(old, from);
    const closing = await sumBefore(old, to);
    expect(page.data.opening_balance).toBe(opening.toString());
    expect(page.data.closing_balance).toBe(closing.toString());
    expect(page.data.total_credits).toBe((closing - opening).toString());
    expect(page.data.entry_count).toBe(Number((closing - opening) / 2n));
    const second = JSON.parse(warm.old[1]) as { data: { lines: Array<{ running_balance: string }> } };
    expect(second.data.lines[0]?.running_balance).toBe((opening + 8n).toString());
  });
});
