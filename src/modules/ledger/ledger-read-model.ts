import type { Knex } from 'knex';
import { toBigInt } from './money';
import type { AccountKind, AccountStatus, OwnerType } from './ledger-types';

type Db = Knex | Knex.Transaction;

/** An entry's place in its account's (created_at, id) order: the keyset of statements. */
export interface EntryPosition {
  /** ISO 8601 UTC with microseconds: exact, unlike a JS Date. */
  bookedAt: string;
  entryId: string;
}

/** The ledger account on the other side of a posting. */
export interface Counterparty {
  ledgerAccountId: string;
  kind: AccountKind;
  ownerType: OwnerType;
  ownerId: string | null;
  externalRef: string | null;
}

/** One entry of an account, with its posting and the posting's main counterparty. */
export interface AccountEntry extends EntryPosition {
  postingId: string;
  postingKind: string;
  amountMinor: bigint;
  /** The posting's metadata texts a statement shows (null when absent). */
  description: string | null;
  reference: string | null;
  counterpartyText: string | null;
  /** The other account of the posting on the opposite side with the largest amount; null when none. */
  counterparty: Counterparty | null;
}

/** What a ledger account holds now. */
export interface AccountState {
  balanceMinor: bigint;
  status: AccountStatus;
}

export interface EntryTotals {
  /** Sum of the positive entries. */
  creditsMinor: bigint;
  /** Sum of the negative entries (zero or less). */
  debitsMinor: bigint;
  count: number;
}

interface EntryRow {
  id: string | number;
  posting_id: string;
  posting_kind: string;
  booked_at: string;
  amount_minor: string | number;
  meta_description: string | null;
  meta_reference: string | null;
  meta_counterparty: string | null;
  counterparty_id: string | null;
  counterparty_kind: AccountKind | null;
  counterparty_owner_type: OwnerType | null;
  counterparty_owner_id: string | null;
  counterparty_external_ref: string | null;
}

/** ISO 8601 UTC with microseconds: exact, so it can serve as a keyset cursor. */
const BOOKED_AT = `to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

function toEntry(row: EntryRow): AccountEntry {
  return {
    entryId: String(row.id),
    postingId: row.posting_id,
    postingKind: row.posting_kind,
    bookedAt: row.booked_at,
    amountMinor: toBigInt(row.amount_minor),
    description: row.meta_description,
    reference: row.meta_reference,
    counterpartyText: row.meta_counterparty,
    counterparty:
      row.counterparty_id === null
        ? null
        : {
            ledgerAccountId: row.counterparty_id,
            kind: row.counterparty_kind as AccountKind,
            ownerType: row.counterparty_owner_type as OwnerType,
            ownerId: row.counterparty_owner_id,
            externalRef: row.counterparty_external_ref,
          },
  };
}

/** Running totals of an account's entries up to a point: what a statement needs of its history. */
export interface Cumulative {
  /** Sum of the entries (the balance at that point). */
  netMinor: bigint;
  creditsMinor: bigint;
  /** Zero or less. */
  debitsMinor: bigint;
  count: bigint;
}

const ZERO: Cumulative = { netMinor: 0n, creditsMinor: 0n, debitsMinor: 0n, count: 0n };

function plus(a: Cumulative, b: Cumulative): Cumulative {
  return { netMinor: a.netMinor + b.netMinor, creditsMinor: a.creditsMinor + b.creditsMinor, debitsMinor: a.debitsMinor + b.debitsMinor, count: a.count + b.count };
}

function minus(a: Cumulative, b: Cumulative): Cumulative {
  return { netMinor: a.netMinor - b.netMinor, creditsMinor: a.creditsMinor - b.creditsMinor, debitsMinor: a.debitsMinor - b.debitsMinor, count: a.count - b.count };
}

interface SumsRow {
  net: string | number;
  credits: string | number;
  debits: string | number;
  n: string | number;
}

function toCumulative(row: SumsRow): Cumulative {
  return { netMinor: toBigInt(row.net), creditsMinor: toBigInt(row.credits), debitsMinor: toBigInt(row.debits), count: toBigInt(row.n) };
}

const SUMS = `coalesce(sum(e.amount_minor), 0) AS net,
              coalesce(sum(e.amount_minor) FILTER (WHERE e.amount_minor > 0), 0) AS credits,
              coalesce(sum(e.amount_minor) FILTER (WHERE e.amount_minor < 0), 0) AS debits,
              count(*) AS n`;

const DAY_MS = 86_400_000;
/**
 * A day's checkpoint is stored only once the day started at least this long ago: far past the
 * statements' settle margin (an entry's created_at is its transaction's start), so no posting
 * can still add an entry before it.
 */
export const CHECKPOINT_SETTLED_MS = 3_600_000;

/** A checkpoint computed by a read, to be stored after it (see StatementCheckpoints). */
export interface Checkpoint {
  accountId: string;
  at: Date;
  totals: Cumulative;
}

/**
 * Checkpoints (running totals at UTC day starts, table ledger_statement_checkpoints) that
 * reads computed because they were missing. Reads run in read-only snapshots, so they only
 * collect them; `save` stores them afterwards, in its own statement, once per day and account
 * (a concurrent reader storing the same one is skipped: both computed the same totals from
 * immutable history).
 */
export class StatementCheckpoints {
  private readonly computed = new Map<string, Checkpoint>();

  add(checkpoint: Checkpoint): void {
    this.computed.set(`${checkpoint.accountId}@${checkpoint.at.toISOString()}`, checkpoint);
  }

  get size(): number {
    return this.computed.size;
  }

  /** Stores the collected checkpoints of settled days; the database's clock has the last word. */
  async save(db: Db): Promise<void> {
    const rows = [...this.computed.values()];
    this.computed.clear();
    for (const checkpoint of rows) {
      await db.raw(
        `INSERT INTO ledger_statement_checkpoints (account_id, at, balance_minor, credits_minor, debits_minor, entry_count)
         SELECT ?::uuid, ?::timestamptz, ?::numeric, ?::numeric, ?::numeric, ?::bigint
          WHERE ?::timestamptz <= now() - make_interval(secs => ?)
         ON CONFLICT (account_id, at) DO NOTHING`,
        [
          checkpoint.accountId,
          checkpoint.at.toISOString(),
          checkpoint.totals.netMinor.toString(),
          checkpoint.totals.creditsMinor.toString(),
          checkpoint.totals.debitsMinor.toString(),
          checkpoint.totals.count.toString(),
          checkpoint.at.toISOString(),
          CHECKPOINT_SETTLED_MS / 1000,
        ],
      );
    }
  }
}

/** Where a running total stops: before an instant, or through an entry (inclusive). */
type Bound = { before: Date } | { through: EntryPosition };

function boundTime(bound: Bound): number {
  return 'before' in bound ? bound.before.getTime() : new Date(bound.through.bookedAt).getTime();
}

/**
 * Reads of one ledger account's entries, for statements: what other modules may know of the
 * ledger tables. Every read takes the account's entries in [from, to) by created_at; read them
 * in one REPEATABLE READ transaction for a consistent statement.
 */
export class LedgerReadModel {
  /** With `checkpoints`, the running totals of statements start from day checkpoints (see cumulative()). */
  constructor(
    private readonly db: Db,
    private readonly checkpoints?: StatementCheckpoints,
  ) {}

  /**
   * The running totals of the account's entries before an instant, or through an entry: the
   * checkpoint of the bound's UTC day (or the day before, while the day is too recent to be
   * stored) plus that day's entries up to the bound. A missing checkpoint is computed from the
   * nearest stored one (the whole history only the first time) and collected for storing.
   * What a statement page costs does not grow with the account's age.
   */
  async cumulative(accountId: string, bound: Bound): Promise<Cumulative> {
    let day = Math.floor(boundTime(bound) / DAY_MS) * DAY_MS;
    if (day > Date.now() - CHECKPOINT_SETTLED_MS) day -= DAY_MS;
    const at = new Date(day);
    const [upper, bindings] = this.upperBound(bound);
    const hit = (await this.db.raw(
      `SELECT c.balance_minor, c.credits_minor, c.debits_minor, c.entry_count, s.*
         FROM ledger_statement_checkpoints c
        CROSS JOIN LATERAL (
          SELECT ${SUMS} FROM entries e
           WHERE e.account_id = c.account_id AND e.created_at >= c.at AND ${upper}) s
        WHERE c.account_id = ? AND c.at = ?`,
      [...bindings, accountId, at],
    )) as { rows: Array<SumsRow & { balance_minor: string; credits_minor: string; debits_minor: string; entry_count: string }> };
    const row = hit.rows[0];
    if (row) {
      const checkpoint = { netMinor: toBigInt(row.balance_minor), creditsMinor: toBigInt(row.credits_minor), debitsMinor: toBigInt(row.debits_minor), count: toBigInt(row.entry_count) };
      return plus(checkpoint, toCumulative(row));
    }
    const checkpoint = await this.computeCheckpoint(accountId, at);
    return plus(checkpoint, await this.sums(accountId, at, bound));
  }

  /** The running totals before `at` (a day start), from the nearest stored checkpoint; collected for storing. */
  private async computeCheckpoint(accountId: string, at: Date): Promise<Cumulative> {
    const nearest = (await this.db.raw(
      `(SELECT 'before' AS side, at, balance_minor, credits_minor, debits_minor, entry_count FROM ledger_statement_checkpoints
         WHERE account_id = ? AND at < ? ORDER BY at DESC LIMIT 1)
       UNION ALL
       (SELECT 'after' AS side, at, balance_minor, credits_minor, debits_minor, entry_count FROM ledger_statement_checkpoints
         WHERE account_id = ? AND at > ? ORDER BY at LIMIT 1)`,
      [accountId, at, accountId, at],
    )) as { rows: Array<{ side: 'before' | 'after'; at: Date; balance_minor: string; credits_minor: string; debits_minor: string; entry_count: string }> };
    const [closest] = nearest.rows.sort((a, b) => Math.abs(new Date(a.at).getTime() - at.getTime()) - Math.abs(new Date(b.at).getTime() - at.getTime()));
    let totals: Cumulative;
    if (!closest) {
      totals = await this.sums(accountId, null, { before: at });
    } else {
      const stored = { netMinor: toBigInt(closest.balance_minor), creditsMinor: toBigInt(closest.credits_minor), debitsMinor: toBigInt(closest.debits_minor), count: toBigInt(closest.entry_count) };
      const storedAt = new Date(closest.at);
      totals = closest.side === 'before' ? plus(stored, await this.sums(accountId, storedAt, { before: at })) : minus(stored, await this.sums(accountId, at, { before: storedAt }));
    }
    this.checkpoints?.add({ accountId, at, totals });
    return totals;
  }

  /** Running totals of the account's entries from `from` (or the beginning) up to the bound. */
  private async sums(accountId: string, from: Date | null, bound: Bound): Promise<Cumulative> {
    const [upper, bindings] = this.upperBound(bound);
    const lower = from === null ? '' : 'AND e.created_at >= ?';
    const result = (await this.db.raw(`SELECT ${SUMS} FROM entries e WHERE e.account_id = ? ${lower} AND ${upper}`, [
      accountId,
      ...(from === null ? [] : [from]),
      ...bindings,
    ])) as { rows: SumsRow[] };
    return result.rows[0] ? toCumulative(result.rows[0]) : ZERO;
  }

  private upperBound(bound: Bound): [string, Knex.RawBinding[]] {
    return 'before' in bound
      ? ['e.created_at < ?', [bound.before]]
      : ['(e.created_at, e.id) <= (?::timestamptz, ?::bigint)', [bound.through.bookedAt, bound.through.entryId]];
  }

  /** The balance and status of each ledger account, by id (unknown ids are absent), in one query. */
  async accountStates(accountIds: readonly string[]): Promise<Map<string, AccountState>> {
    if (accountIds.length === 0) return new Map();
    const rows = (await this.db('ledger_accounts')
      .whereIn('id', [...new Set(accountIds)])
      .select('id', 'balance_minor', 'status')) as Array<{ id: string; balance_minor: string | number; status: AccountStatus }>;
    return new Map(rows.map((row) => [row.id, { balanceMinor: toBigInt(row.balance_minor), status: row.status }]));
  }

  /** The position of one of the account's entries; undefined when `entryId` is not one of them. */
  async entryPosition(accountId: string, entryId: string): Promise<EntryPosition | undefined> {
    const row = (await this.db('entries as e')
      .where({ 'e.id': entryId, 'e.account_id': accountId })
      .first('e.id', this.db.raw(`${BOOKED_AT} AS booked_at`))) as { id: string | number; booked_at: string } | undefined;
    return row ? { entryId: String(row.id), bookedAt: row.booked_at } : undefined;
  }

  /** Up to `limit` of the account's entries in [from, to), oldest first, after `after` when given. */
  async entries(accountId: string, interval: { from: Date; to: Date }, after: EntryPosition | undefined, limit: number): Promise<AccountEntry[]> {
    const bindings: Knex.RawBinding[] = [accountId, interval.from, interval.to];
    let keyset = '';
    if (after) {
      keyset = 'AND (e.created_at, e.id) > (?::timestamptz, ?::bigint)';
      bindings.push(after.bookedAt, after.entryId);
    }
    bindings.push(limit);
    const result = await this.db.raw(
      `SELECT e.id, e.posting_id, p.kind AS posting_kind, ${BOOKED_AT} AS booked_at, e.amount_minor,
              p.metadata->>'description' AS meta_description,
              p.metadata->>'reference' AS meta_reference,
              p.metadata->>'counterparty' AS meta_counterparty,
              la.id AS counterparty_id, la.kind AS counterparty_kind, la.owner_type AS counterparty_owner_type,
              la.owner_id AS counterparty_owner_id, la.external_ref AS counterparty_external_ref
         FROM entries e
         JOIN postings p ON p.id = e.posting_id
         LEFT JOIN LATERAL (
           SELECT o.account_id FROM entries o
            WHERE o.posting_id = e.posting_id AND o.account_id <> e.account_id
            ORDER BY (sign(o.amount_minor) = -sign(e.amount_minor)) DESC, abs(o.amount_minor) DESC, o.id
            LIMIT 1
         ) other ON true
         LEFT JOIN ledger_accounts la ON la.id = other.account_id
        WHERE e.account_id = ? AND e.created_at >= ? AND e.created_at < ? ${keyset}
        ORDER BY e.created_at, e.id
        LIMIT ?`,
      bindings,
    );
    return (result.rows as EntryRow[]).map(toEntry);
  }
}
