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

/**
 * Reads of one ledger account's entries, for statements: what other modules may know of the
 * ledger tables. Every read takes the account's entries in [from, to) by created_at; read them
 * in one REPEATABLE READ transaction for a consistent statement.
 */
export class LedgerReadModel {
  constructor(private readonly db: Db) {}

  /** The balance and status of each ledger account, by id (unknown ids are absent), in one query. */
  async accountStates(accountIds: readonly string[]): Promise<Map<string, AccountState>> {
    if (accountIds.length === 0) return new Map();
    const rows = (await this.db('ledger_accounts')
      .whereIn('id', [...new Set(accountIds)])
      .select('id', 'balance_minor', 'status')) as Array<{ id: string; balance_minor: string | number; status: AccountStatus }>;
    return new Map(rows.map((row) => [row.id, { balanceMinor: toBigInt(row.balance_minor), status: row.status }]));
  }

  /** Sum of the account's entries booked before `before` (an opening balance). */
  async balanceBefore(accountId: string, before: Date): Promise<bigint> {
    const row = (await this.db('entries')
      .where('account_id', accountId)
      .andWhere('created_at', '<', before)
      .first(this.db.raw('coalesce(sum(amount_minor), 0) AS total'))) as { total: string | number };
    return toBigInt(row.total);
  }

  /** Credits, debits and count of the account's entries in [from, to). */
  async totals(accountId: string, from: Date, to: Date): Promise<EntryTotals> {
    const row = (await this.db('entries')
      .where('account_id', accountId)
      .andWhere('created_at', '>=', from)
      .andWhere('created_at', '<', to)
      .first(
        this.db.raw('coalesce(sum(amount_minor) FILTER (WHERE amount_minor > 0), 0) AS credits'),
        this.db.raw('coalesce(sum(amount_minor) FILTER (WHERE amount_minor < 0), 0) AS debits'),
        this.db.raw('count(*) AS count'),
      )) as { credits: string | number; debits: string | number; count: string | number };
    return { creditsMinor: toBigInt(row.credits), debitsMinor: toBigInt(row.debits), count: Number(row.count) };
  }

  /** Sum of the account's entries from `from` up to and including `through`. */
  async sumThrough(accountId: string, from: Date, through: EntryPosition): Promise<bigint> {
    const row = (await this.db('entries as e')
      .where('e.account_id', accountId)
      .andWhere('e.created_at', '>=', from)
      .andWhereRaw('(e.created_at, e.id) <= (?::timestamptz, ?::bigint)', [through.bookedAt, through.entryId])
      .first(this.db.raw('coalesce(sum(e.amount_minor), 0) AS total'))) as { total: string | number };
    return toBigInt(row.total);
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
