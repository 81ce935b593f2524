import type { Knex } from 'knex';
import { prepared } from '../../db/prepared';
import { toBigInt } from './money';
import type {
  AccountIdentity,
  AccountKind,
  AccountStatus,
  Entry,
  InvariantViolation,
  LedgerAccount,
  OwnerType,
} from './ledger-types';

type Db = Knex | Knex.Transaction;

interface AccountRow {
  id: string;
  owner_type: OwnerType;
  owner_id: string | null;
  currency: string;
  kind: AccountKind;
  external_ref: string | null;
  allow_negative: boolean;
  balance_minor: string;
  status: AccountStatus;
  created_at: Date;
  updated_at: Date;
}

interface PostingRow {
  id: string;
  kind: string;
  reference: string;
  metadata: Record<string, unknown>;
  reverses_posting_id: string | null;
  created_at: Date;
}

interface EntryRow {
  id: string;
  posting_id: string;
  account_id: string;
  currency: string;
  amount_minor: string;
  created_at: Date;
}

export function toAccount(row: AccountRow): LedgerAccount {
  return {
    id: row.id,
    ownerType: row.owner_type,
    ownerId: row.owner_id,
    currency: row.currency,
    kind: row.kind,
    externalRef: row.external_ref,
    allowNegative: row.allow_negative,
    balanceMinor: toBigInt(row.balance_minor),
    status: row.status,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function toEntry(row: EntryRow): Entry {
  return {
    id: String(row.id),
    postingId: row.posting_id,
    accountId: row.account_id,
    currency: row.currency,
    amountMinor: toBigInt(row.amount_minor),
    createdAt: row.created_at,
  };
}

function identityWhere(identity: AccountIdentity) {
  return (qb: Knex.QueryBuilder) => {
    qb.where({ owner_type: identity.ownerType, currency: identity.currency, kind: identity.kind });
    if (identity.ownerId === null) qb.whereNull('owner_id');
    else qb.where('owner_id', identity.ownerId);
    if (identity.externalRef == null) qb.whereNull('external_ref');
    else qb.where('external_ref', identity.externalRef);
  };
}

/** Knex queries of the ledger tables. Only the ledger service calls these. */
export const ledgerRepository = {
  /** Locks the accounts (SELECT ... FOR UPDATE) in id order, so concurrent postings never deadlock. */
  async lockAccounts(trx: Knex.Transaction, ids: string[]): Promise<LedgerAccount[]> {
    // Raw SQL: this is the hot path of every posting.
    const { rows } = (await prepared('ledger_lock_accounts', trx.raw('SELECT * FROM ledger_accounts WHERE id = ANY(?::uuid[]) ORDER BY id FOR UPDATE', [ids]))) as { rows: AccountRow[] };
    return rows.map(toAccount);
  },

  /** The wallets of several users in one currency, by owner id (one query). */
  async findWallets(db: Db, ownerIds: string[], currency: string): Promise<Map<string, LedgerAccount>> {
    const { rows } = (await prepared(
      'ledger_find_wallets',
      db.raw(
        `SELECT * FROM ledger_accounts
          WHERE owner_type = 'user' AND owner_id = ANY(?::uuid[]) AND currency = ? AND kind = 'wallet' AND external_ref IS NULL`,
        [ownerIds, currency],
      ),
    )) as { rows: AccountRow[] };
    return new Map(rows.map((row) => [row.owner_id as string, toAccount(row)]));
  },

  async findAccount(db: Db, identity: AccountIdentity): Promise<LedgerAccount | undefined> {
    const row = await db<AccountRow>('ledger_accounts').where(identityWhere(identity)).first();
    return row ? toAccount(row) : undefined;
  },

  async findAccountById(db: Db, id: string): Promise<LedgerAccount | undefined> {
    const row = await db<AccountRow>('ledger_accounts').where({ id }).first();
    return row ? toAccount(row) : undefined;
  },

  /** Inserts the account unless one with the same identity exists (race-safe); returns the new row or nothing. */
  async insertAccountIfAbsent(db: Db, identity: AccountIdentity, allowNegative: boolean): Promise<LedgerAccount | undefined> {
    const rows = await db<AccountRow>('ledger_accounts')
      .insert({
        owner_type: identity.ownerType,
        owner_id: identity.ownerId,
        currency: identity.currency,
        kind: identity.kind,
        external_ref: identity.externalRef ?? null,
        allow_negative: allowNegative,
      })
      .onConflict(['owner_type', 'owner_id', 'currency', 'kind', 'external_ref'])
      .ignore()
      .returning('*');
    const row = rows[0] as AccountRow | undefined;
    return row ? toAccount(row) : undefined;
  },

  async listAccounts(
    db: Db,
    filter: { ownerType: OwnerType; ownerId: string | null; kind?: AccountKind; currency?: string },
  ): Promise<LedgerAccount[]> {
    const query = db<AccountRow>('ledger_accounts').where({ owner_type: filter.ownerType });
    if (filter.ownerId === null) query.whereNull('owner_id');
    else query.where('owner_id', filter.ownerId);
    if (filter.kind) query.where('kind', filter.kind);
    if (filter.currency) query.where('currency', filter.currency);
    const rows = await query.orderBy([{ column: 'currency' }, { column: 'kind' }, { column: 'created_at' }, { column: 'id' }]);
    return rows.map(toAccount);
  },

  async setAccountStatus(db: Db, id: string, status: AccountStatus): Promise<boolean> {
    const count = await db('ledger_accounts').where({ id }).update({ status, updated_at: db.fn.now() });
    return count > 0;
  },

  /**
   * Inserts a posting and its entries in one statement (one round trip). The entries go in
   * account id order, so the balance trigger updates (and locks) accounts in that order too.
   */
  async insertPostingWithEntries(
    trx: Knex.Transaction,
    posting: { kind: string; reference: string; metadata: Record<string, unknown>; reversesPostingId: string | null },
    entries: Array<{ accountId: string; currency: string; amountMinor: bigint }>,
  ): Promise<{ posting: PostingRow; entries: Entry[] }> {
    const { rows } = (await prepared(
      'ledger_insert_posting',
      trx.raw(
        `WITH p AS (
           INSERT INTO postings (kind, reference, metadata, reverses_posting_id) VALUES (?, ?, ?::jsonb, ?::uuid)
           RETURNING *
         ), e AS (
           INSERT INTO entries (posting_id, account_id, currency, amount_minor)
           SELECT p.id, x.account_id, x.currency, x.amount_minor
             FROM p, unnest(?::uuid[], ?::char(3)[], ?::bigint[]) WITH ORDINALITY AS x(account_id, currency, amount_minor, n)
            ORDER BY x.account_id, x.n
           RETURNING *
         )
         SELECT row_to_json(p.*) AS posting,
                (SELECT json_agg(json_build_object('id', e.id::text, 'posting_id', e.posting_id, 'account_id', e.account_id, 'currency', e.currency,
                                                   'amount_minor', e.amount_minor::text, 'created_at', e.created_at) ORDER BY e.id) FROM e) AS entries
           FROM p`,
        [
          posting.kind,
          posting.reference,
          JSON.stringify(posting.metadata),
          posting.reversesPostingId,
          entries.map((entry) => entry.accountId),
          entries.map((entry) => entry.currency),
          entries.map((entry) => entry.amountMinor.toString()),
        ],
      ),
    )) as { rows: Array<{ posting: PostingRow & { created_at: string }; entries: Array<EntryRow & { created_at: string }> }> };
    const row = rows[0] as (typeof rows)[number];
    // JSON has no dates: parse them (int8 values were cast to text in SQL, so they stay exact).
    return {
      posting: { ...row.posting, created_at: new Date(row.posting.created_at) },
      entries: row.entries.map((entry) => toEntry({ ...entry, created_at: new Date(entry.created_at) })),
    };
  },

  async findPosting(db: Db, id: string): Promise<{ posting: PostingRow; entries: Entry[] } | undefined> {
    const posting = await db<PostingRow>('postings').where({ id }).first();
    if (!posting) return undefined;
    const entries = await db<EntryRow>('entries').where({ posting_id: id }).orderBy('id');
    return { posting, entries: entries.map(toEntry) };
  },

  async findPostingByReference(db: Db, kind: string, reference: string): Promise<PostingRow | undefined> {
    return db<PostingRow>('postings').where({ kind, reference }).first();
  },

  /** Every invariant violation over the whole ledger, read from one snapshot. */
  async invariantViolations(db: Db): Promise<InvariantViolation[]> {
    const violations: InvariantViolation[] = [];
    const currencies = await db('entries')
      .select('currency')
      .sum({ total: 'amount_minor' })
      .groupBy('currency')
      .havingRaw('sum(amount_minor) <> 0');
    for (const row of currencies as Array<{ currency: string; total: string }>) {
      violations.push({ kind: 'currency_unbalanced', currency: row.currency, sumMinor: toBigInt(row.total) });
    }
    const postings = await db('entries')
      .select('posting_id', 'currency')
      .sum({ total: 'amount_minor' })
      .groupBy('posting_id', 'currency')
      .havingRaw('sum(amount_minor) <> 0');
    for (const row of postings as Array<{ posting_id: string; currency: string; total: string }>) {
      violations.push({ kind: 'posting_unbalanced', postingId: row.posting_id, currency: row.currency, sumMinor: toBigInt(row.total) });
    }
    const mismatches = await db.raw(`
      SELECT a.id, a.balance_minor, coalesce(e.total, 0) AS total
        FROM ledger_accounts a
        LEFT JOIN (SELECT account_id, sum(amount_minor) AS total FROM entries GROUP BY account_id) e ON e.account_id = a.id
       WHERE a.balance_minor <> coalesce(e.total, 0)`);
    for (const row of mismatches.rows as Array<{ id: string; balance_minor: string; total: string }>) {
      violations.push({
        kind: 'balance_mismatch',
        accountId: row.id,
        balanceMinor: toBigInt(row.balance_minor),
        entriesSumMinor: toBigInt(row.total),
      });
    }
    const negatives = await db<AccountRow>('ledger_accounts').where('allow_negative', false).andWhere('balance_minor', '<', 0);
    for (const row of negatives) {
      violations.push({ kind: 'negative_balance', accountId: row.id, balanceMinor: toBigInt(row.balance_minor) });
    }
    return violations;
  },
};
