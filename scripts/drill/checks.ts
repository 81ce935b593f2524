// The invariants the drill checks after its workload and faults (scripts/drill/drill.ts), one
// function each in CHECKS: each reads the database (and the drill's journal of what the client
// was told) and returns its violations, [] when it holds. A new invariant is one more entry:
// the webhook deliveries ("every event reached the receiver at least once, duplicates counted")
// and the scheduled jobs ("ran once per period across the instances") join here once the events
// and job-queue branches have landed.
import type { Knex } from 'knex';
import { reconcile } from '../../src/modules/ledger';

/** What the client was told about one logical operation (all its retries, one key). */
export interface JournalEntry {
  kind: 'transfer' | 'payment' | 'escrow_create' | 'escrow_fund' | 'escrow_deliver' | 'escrow_accept' | 'tontine_contribution';
  /** A marker the operation leaves on its effect: a transfer's note, an escrow's or payment's reference. */
  marker: string;
  /** acknowledged: a 2xx (or a replay naming the first answer); refused: a final 4xx; unknown: no answer after every retry. */
  outcome: 'acknowledged' | 'refused' | 'unknown';
  /** The resource the acknowledgement named (transfer, payment, escrow id). */
  resourceId?: string;
  status?: number;
  error?: string;
  attempts: number;
  /** For tontine contributions: the tontine, cycle and member. */
  tontine?: { id: string; cycle: number; userId: string };
}

export interface CheckContext {
  db: Knex;
  journal: JournalEntry[];
}

export interface Check {
  name: string;
  run: (ctx: CheckContext) => Promise<string[]>;
}

const json = (value: unknown): string => JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));

/** How many effects of each marker the database holds, and their ids. */
async function effectsByMarker(db: Knex, sql: string, markers: string[]): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  if (markers.length === 0) return found;
  const rows = (await db.raw(sql, [markers])).rows as Array<{ marker: string; id: string }>;
  for (const row of rows) found.set(row.marker, [...(found.get(row.marker) ?? []), row.id]);
  return found;
}

/** Acknowledged: exactly one effect, the one named; refused: none; unknown: at most one. */
function exactlyOnce(entries: JournalEntry[], effects: Map<string, string[]>, what: string): string[] {
  const violations: string[] = [];
  for (const entry of entries) {
    const ids = effects.get(entry.marker) ?? [];
    if (entry.outcome === 'acknowledged' && (ids.length !== 1 || (entry.resourceId && ids[0] !== entry.resourceId))) {
      violations.push(`${what} ${entry.marker} was acknowledged (${entry.resourceId ?? '?'}) but the database has ${ids.length}: ${ids.join(', ')}`);
    }
    if (entry.outcome === 'refused' && ids.length !== 0) violations.push(`${what} ${entry.marker} was refused (${entry.status} ${entry.error}) but the database has ${ids.length}`);
    if (entry.outcome === 'unknown' && ids.length > 1) violations.push(`${what} ${entry.marker} had no answer and the database has ${ids.length}`);
  }
  return violations;
}

export const CHECKS: Check[] = [
  {
    name: 'ledger: each currency sums to zero, postings balance, balances equal entries, no forbidden negative balance',
    run: async ({ db }) => (await reconcile(db)).map((violation) => json(violation)),
  },
  {
    name: 'transfers: every acknowledged one made exactly one transfer with one posting, every refused one none',
    run: async ({ db, journal }) => {
      const entries = journal.filter((e) => e.kind === 'transfer');
      const effects = await effectsByMarker(db, 'SELECT note AS marker, id FROM transfers WHERE note = ANY(?)', entries.map((e) => e.marker));
      const violations = exactlyOnce(entries, effects, 'transfer');
      const orphans = (await db.raw(`SELECT count(*)::int AS n FROM transfers t LEFT JOIN postings p ON p.id = t.posting_id WHERE p.id IS NULL`)).rows[0].n as number;
      if (orphans > 0) violations.push(`${orphans} transfer(s) without their posting`);
      return violations;
    },
  },
  {
    name: 'payment page: every acknowledged payment exists once, every refused one not at all',
    run: async ({ db, journal }) => {
      const entries = journal.filter((e) => e.kind === 'payment');
      const effects = await effectsByMarker(db, 'SELECT customer_reference AS marker, id FROM payments WHERE customer_reference = ANY(?)', entries.map((e) => e.marker));
      return exactlyOnce(entries, effects, 'payment');
    },
  },
  {
    name: 'escrows: each acknowledged step happened once (one escrow, one funding, one settlement), refused steps not at all',
    run: async ({ db, journal }) => {
      const creates = journal.filter((e) => e.kind === 'escrow_create');
      const violations = exactlyOnce(creates, await effectsByMarker(db, 'SELECT reference AS marker, id FROM escrows WHERE reference = ANY(?)', creates.map((e) => e.marker)), 'escrow');
      const steps: Array<[JournalEntry['kind'], string]> = [
        ['escrow_fund', `SELECT e.reference AS marker, p.id FROM escrows e JOIN postings p ON p.kind = 'escrow.funding' AND p.reference = e.id::text WHERE e.reference = ANY(?)`],
        ['escrow_accept', `SELECT e.reference AS marker, p.id FROM escrows e JOIN postings p ON p.kind = 'escrow.settlement' AND p.reference = e.id::text WHERE e.reference = ANY(?)`],
        ['escrow_deliver', `SELECT reference AS marker, id FROM escrows WHERE delivered_at IS NOT NULL AND reference = ANY(?)`],
      ];
      for (const [kind, sql] of steps) {
        const entries = journal.filter((e) => e.kind === kind).map((e) => ({ ...e, resourceId: undefined }));
        violations.push(...exactlyOnce(entries, await effectsByMarker(db, sql, entries.map((e) => e.marker)), kind.replace('_', ' ')));
      }
      return violations;
    },
  },
  {
    name: 'escrow holding: each currency\'s holding account equals what funded, unsettled escrows hold',
    run: async ({ db }) => {
      const rows = (
        await db.raw(`
          WITH owed AS (
            SELECT currency, sum(amount_minor + buyer_fee_minor) AS owed FROM escrows
            WHERE funding_posting_id IS NOT NULL AND settlement_posting_id IS NULL GROUP BY currency),
          held AS (
            SELECT currency, sum(balance_minor) AS held FROM ledger_accounts WHERE kind = 'escrow_holding' GROUP BY currency)
          SELECT coalesce(o.currency, h.currency) AS currency, coalesce(o.owed, 0)::text AS owed, coalesce(h.held, 0)::text AS held
          FROM owed o FULL JOIN held h ON h.currency = o.currency`)
      ).rows as Array<{ currency: string; owed: string; held: string }>;
      return rows.filter((r) => r.owed !== r.held).map((r) => `escrow holding ${r.currency}: holds ${r.held}, funded escrows are owed ${r.owed}`);
    },
  },
  {
    name: 'tontine pools: each pool holds exactly the paid, unrefunded contributions of its cycles not yet paid out',
    run: async ({ db }) => {
      const rows = (
        await db.raw(`
          SELECT t.id, t.status, a.balance_minor::text AS held,
            (t.contribution_minor * (SELECT count(*) FROM tontine_contributions c
              JOIN tontine_cycles y ON y.tontine_id = c.tontine_id AND y.number = c.cycle_number
              WHERE c.tontine_id = t.id AND c.posting_id IS NOT NULL AND c.refund_posting_id IS NULL AND y.payout_posting_id IS NULL))::text AS owed
          FROM tontines t JOIN ledger_accounts a ON a.id = t.pool_account_id`)
      ).rows as Array<{ id: string; status: string; held: string; owed: string }>;
      return rows.filter((r) => r.held !== r.owed).map((r) => `tontine ${r.id} (${r.status}): pool holds ${r.held}, open contributions are ${r.owed}`);
    },
  },
  {
    name: 'tontine contributions: every acknowledged one paid once, refused ones not at all, never two for one member and cycle',
    run: async ({ db, journal }) => {
      const entries = journal.filter((e) => e.kind === 'tontine_contribution');
      const effects = await effectsByMarker(
        db,
        `SELECT c.tontine_id || ':' || c.cycle_number || ':' || c.user_id AS marker, c.id FROM tontine_contributions c
         WHERE c.posting_id IS NOT NULL AND c.tontine_id || ':' || c.cycle_number || ':' || c.user_id = ANY(?)`,
        entries.map((e) => e.marker),
      );
      const violations = exactlyOnce(
        entries.map((e) => ({ ...e, resourceId: undefined })),
        effects,
        'contribution',
      );
      const doubles = (await db.raw(`SELECT tontine_id, cycle_number, user_id, count(*)::int AS n FROM tontine_contributions WHERE posting_id IS NOT NULL GROUP BY 1, 2, 3 HAVING count(*) > 1`)).rows as unknown[];
      violations.push(...doubles.map((row) => `a member paid one cycle twice: ${json(row)}`));
      return violations;
    },
  },
];

export interface CheckReport {
  name: string;
  violations: string[];
}

export async function runChecks(ctx: CheckContext, checks: Check[] = CHECKS): Promise<CheckReport[]> {
  const reports: CheckReport[] = [];
  for (const check of checks) {
    try {
      reports.push({ name: check.name, violations: await check.run(ctx) });
    } catch (error) {
      reports.push({ name: check.name, violations: [`the check itself failed: ${error instanceof Error ? error.message : String(error)}`] });
    }
  }
  return reports;
}

/**
 * The drill's proof that its checks can fail: a one-sided entry of one minor unit on a wallet,
 * written around the ledger's guard triggers (session_replication_role = replica, superuser
 * only), as a bug that skipped half a posting would leave it. Returns a function that removes it.
 */
export async function injectBadLedgerRow(db: Knex): Promise<() => Promise<void>> {
  const target = (await db.raw(`SELECT e.posting_id, a.id AS account_id, a.currency FROM entries e JOIN ledger_accounts a ON a.id = e.account_id WHERE a.kind = 'wallet' LIMIT 1`)).rows[0] as
    | { posting_id: string; account_id: string; currency: string }
    | undefined;
  if (!target) throw new Error('no wallet entry to corrupt');
  const inserted = await db.transaction(async (trx) => {
    await trx.raw(`SET LOCAL session_replication_role = replica`);
    const row = (await trx.raw(`INSERT INTO entries (posting_id, account_id, currency, amount_minor) VALUES (?, ?, ?, 1) RETURNING id`, [target.posting_id, target.account_id, target.currency])).rows[0] as { id: string };
    return row.id;
  });
  return async () => {
    await db.transaction(async (trx) => {
      await trx.raw(`SET LOCAL session_replication_role = replica`);
      await trx.raw(`DELETE FROM entries WHERE id = ?`, [inserted]);
    });
  };
}
