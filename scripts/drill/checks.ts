// The invariants the drill checks after its workload and faults (scripts/drill/drill.ts), one
// function each in CHECKS: each reads the database (and the drill's journal of what the client
// was told, what its webhook receiver got, when the instances started) and returns its
// violations, [] when it holds, and what it saw (printed under its line). A new invariant is
// one more entry.
import type { Knex } from 'knex';
import { reconcile } from '../../src/modules/ledger';

/** What the client was told about one logical operation (all its retries, one key). */
export interface JournalEntry {
  kind: 'transfer' | 'payment' | 'escrow_create' | 'escrow_fund' | 'escrow_deliver' | 'escrow_accept' | 'tontine_contribution' | 'top_up' | 'top_up_settlement';
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

/** What the drill's webhook receiver got, per `webhook-id`. */
export interface Reception {
  /** Deliveries it answered with a 2xx (more than one: a duplicate). */
  acknowledged: number;
  /** Attempts it refused on purpose (a 503, to be retried). */
  refused: number;
  /** Deliveries whose signature the `standardwebhooks` verifier refused. */
  badSignature: number;
}

export interface WebhookContext {
  /** The demo organisation's endpoint the drill pointed at its receiver. */
  endpointId: string;
  organizationId: string;
  /** The organisation's events after this `events.sequence` must each have a delivery to the endpoint. */
  afterSequence: string;
  received: Map<string, Reception>;
}

export interface CheckContext {
  db: Knex;
  journal: JournalEntry[];
  webhooks?: WebhookContext;
  /** The drill's window (the first instance's start to now) and how many times an instance started. */
  window?: { from: Date; to: Date; instanceStarts: number };
}

export interface CheckResult {
  violations: string[];
  /** What the check saw, printed under its line whether it passed or not. */
  info: string[];
}

export interface Check {
  name: string;
  run: (ctx: CheckContext) => Promise<string[] | CheckResult>;
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
    name: 'top-ups: every acknowledged one exists once, each acknowledged settlement credited its wallet once, refused ones nothing',
    run: async ({ db, journal }) => {
      const creates = journal.filter((e) => e.kind === 'top_up');
      const violations = exactlyOnce(creates, await effectsByMarker(db, 'SELECT msisdn AS marker, id FROM top_ups WHERE msisdn = ANY(?)', creates.map((e) => e.marker)), 'top-up');
      const settlements = journal.filter((e) => e.kind === 'top_up_settlement').map((e) => ({ ...e, resourceId: undefined }));
      const credits = await effectsByMarker(
        db,
        `SELECT t.msisdn AS marker, p.id FROM top_ups t JOIN postings p ON p.kind = 'top_up.credit' AND p.reference = t.id::text WHERE t.msisdn = ANY(?)`,
        settlements.map((e) => e.marker),
      );
      violations.push(...exactlyOnce(settlements, credits, 'top-up credit'));
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
  {
    name: 'webhooks: every event of the organisation has its delivery, each reached the receiver at least once, signed (duplicates counted)',
    run: async ({ db, webhooks }) => {
      if (!webhooks) return ['the drill set up no webhook receiver'];
      const { endpointId, organizationId, afterSequence, received } = webhooks;
      const violations: string[] = [];
      // The outbox: each event of the organisation (after the endpoint was pointed at the
      // receiver) has a delivery to it; events for other endpoints only (tests, disabled) aside.
      const undelivered = (
        await db.raw(
          `SELECT e.id, e.type FROM events e
           WHERE e.organization_id = ? AND e.sequence > ?::bigint AND e.type NOT LIKE 'webhook\\_endpoint.%'
             AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.endpoint_id = ?)`,
          [organizationId, afterSequence, endpointId],
        )
      ).rows as Array<{ id: string; type: string }>;
      violations.push(...undelivered.map((e) => `event ${e.type} ${e.id} has no delivery to the endpoint`));
      const deliveries = (
        await db.raw(
          `SELECT 'evt_' || replace(e.id::text, '-', '') AS event_id, e.type, d.status, d.attempt_count FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE d.endpoint_id = ?`,
          [endpointId],
        )
      ).rows as Array<{ event_id: string; type: string; status: string; attempt_count: number }>;
      let duplicates = 0;
      let retried = 0;
      for (const delivery of deliveries) {
        const got = received.get(delivery.event_id);
        if (!got || got.acknowledged === 0) violations.push(`event ${delivery.type} ${delivery.event_id} never reached the receiver (delivery ${delivery.status}, ${delivery.attempt_count} attempts)`);
        if (got && got.badSignature > 0) violations.push(`event ${delivery.event_id}: ${got.badSignature} delivery(ies) with a signature standardwebhooks refused`);
        if (got) duplicates += Math.max(0, got.acknowledged - 1);
        if (got && got.refused > 0) retried += 1;
      }
      const known = new Set(deliveries.map((d) => d.event_id));
      const strangers = [...received.keys()].filter((id) => !known.has(id));
      violations.push(...strangers.map((id) => `the receiver got ${id}, which is no delivery of its endpoint`));
      const byType = new Map<string, number>();
      for (const d of deliveries) byType.set(d.type, (byType.get(d.type) ?? 0) + 1);
      return {
        violations,
        info: [
          `${deliveries.length} events delivered (${[...byType].map(([type, n]) => `${type} ${n}`).join(', ')}); ${retried} refused once on purpose and retried; duplicates: ${duplicates}`,
        ],
      };
    },
  },
  {
    name: 'scheduled jobs: each periodic task ran at most once per period (plus one run per instance start) across the instances, and ran',
    run: async ({ db, window }) => {
      if (!window) return ['the drill gave no time window'];
      // Each periodic task's period is its pg-boss schedule's slot (src/jobs/jobs.ts `every`).
      const schedules = (await db.raw(`SELECT name, (options->>'singletonSeconds')::int AS period FROM pgboss.schedule ORDER BY name`)).rows as Array<{ name: string; period: number }>;
      if (schedules.length === 0) return ['no periodic task is scheduled in pgboss.schedule'];
      const runs = (
        await db.raw(
          `SELECT name, singleton_key, singleton_on::text AS slot, count(*)::int AS n FROM (
             SELECT name, singleton_key, singleton_on, started_on FROM pgboss.job
             UNION ALL SELECT name, singleton_key, singleton_on, started_on FROM pgboss.archive) j
           WHERE started_on IS NOT NULL AND started_on BETWEEN ? AND ? AND name = ANY(?)
           GROUP BY 1, 2, 3`,
          [window.from, window.to, schedules.map((s) => s.name)],
        )
      ).rows as Array<{ name: string; singleton_key: string | null; slot: string | null; n: number }>;
      const seconds = (window.to.getTime() - window.from.getTime()) / 1000;
      const violations: string[] = [];
      const info: string[] = [];
      for (const { name, period } of schedules) {
        const mine = runs.filter((r) => r.name === name);
        for (const r of mine.filter((r) => r.n > 1)) violations.push(`${name}: ${r.n} runs in the one slot ${r.slot} (key ${r.singleton_key})`);
        const ticks = mine.filter((r) => r.singleton_key === 'tick').reduce((sum, r) => sum + r.n, 0);
        const starts = mine.filter((r) => r.singleton_key === 'start').reduce((sum, r) => sum + r.n, 0);
        const others = mine.filter((r) => r.singleton_key !== 'tick' && r.singleton_key !== 'start').reduce((sum, r) => sum + r.n, 0);
        const allowed = Math.ceil(seconds / period) + 1 + window.instanceStarts;
        if (ticks + starts + others > allowed) violations.push(`${name}: ${ticks + starts + others} runs in ${seconds.toFixed(0)} s, more than once per ${period} s period (at most ${allowed})`);
        if (others > 0) violations.push(`${name}: ${others} runs outside its schedule`);
        if (period <= seconds / 2 && ticks + starts === 0) violations.push(`${name}: never ran in ${seconds.toFixed(0)} s (period ${period} s)`);
        info.push(`${name}: ${ticks + starts} runs (${starts} at an instance start) in ${seconds.toFixed(0)} s, period ${period} s, at most ${allowed}`);
      }
      return { violations, info };
    },
  },
];

export interface CheckReport {
  name: string;
  violations: string[];
  info: string[];
}

export async function runChecks(ctx: CheckContext, checks: Check[] = CHECKS): Promise<CheckReport[]> {
  const reports: CheckReport[] = [];
  for (const check of checks) {
    try {
      const result = await check.run(ctx);
      reports.push(Array.isArray(result) ? { name: check.name, violations: result, info: [] } : { name: check.name, ...result });
    } catch (error) {
      reports.push({ name: check.name, violations: [`the check itself failed: ${error instanceof Error ? error.message : String(error)}`], info: [] });
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
