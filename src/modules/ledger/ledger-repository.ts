import type { Knex } from 'knex';
import { queryPrepared } from '../../db/prepared';
import { toBigInt } from './money';
import type { LimitRefusalDetail } from '../limits';
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

/**
 * The accounts of identities $1..$5 (identityArrays), joined to `columns` (i.n is the identity's
 * 1-based position). The identity is UNIQUE NULLS NOT DISTINCT, but a join on IS NOT DISTINCT
 * FROM could not use its index: each shape of nullable columns (owner, external_ref) is its own
 * branch, where `IS NULL` and `=` both are index conditions.
 */
function identitiesJoin(columns: string): string {
  const branch = (owner: string, ref: string) =>
    `SELECT ${columns} FROM unnest($1::text[], $2::uuid[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS i(owner_type, owner_id, currency, kind, external_ref, n)
       JOIN ledger_accounts a ON a.owner_type = i.owner_type AND a.currency = i.currency AND a.kind = i.kind AND ${owner} AND ${ref}`;
  return [
    branch('a.owner_id = i.owner_id', 'a.external_ref IS NULL AND i.external_ref IS NULL'),
    branch('a.owner_id = i.owner_id', 'a.external_ref = i.external_ref'),
    branch('a.owner_id IS NULL AND i.owner_id IS NULL', 'a.external_ref IS NULL AND i.external_ref IS NULL'),
    branch('a.owner_id IS NULL AND i.owner_id IS NULL', 'a.external_ref = i.external_ref'),
  ].join('\n UNION ALL\n');
}

function identityArrays(identities: readonly AccountIdentity[]): unknown[] {
  return [
    identities.map((identity) => identity.ownerType),
    identities.map((identity) => identity.ownerId),
    identities.map((identity) => identity.currency),
    identities.map((identity) => identity.kind),
    identities.map((identity) => identity.externalRef ?? null),
  ];
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

/** What `ledger_post` answers: a refusal (nothing written), or the posting it wrote. */
export type PostingResult =
  | { refusal: 'AccountFrozen'; detail: { account_id: string; owner_id: string | null } }
  | { refusal: 'InsufficientFunds'; detail: { account_id: string; owner_id: string | null; currency: string; available: string; required: string } }
  | { refusal: 'LimitExceeded'; detail: LimitRefusalDetail }
  | { refusal: null; posting: PostingRow; entries: Entry[]; balancesAfter: Map<string, bigint> };

interface LedgerPostRow {
  refusal: 'AccountFrozen' | 'InsufficientFunds' | 'LimitExceeded' | null;
  /** What ledger_post says of a refusal: the account, for InsufficientFunds the amounts, for LimitExceeded the limit. */
  refusal_detail: ({ account_id: string; owner_id: string | null; currency: string; available: string; required: string } | LimitRefusalDetail) | null;
  posting_id: string;
  created_at: Date;
  entry_ids: string[];
  entry_accounts: string[];
  entry_currencies: string[];
  entry_amounts: string[];
  balance_accounts: string[];
  balances: string[];
}

const LEDGER_POST_SQL = 'SELECT * FROM ledger_post($1, $2, $3::jsonb, $4::uuid, $5::uuid[], $6::bigint[], $7)';

/** Queries of the ledger tables, bound to a database handle or a transaction. Only the ledger service builds one. */
export class LedgerRepository {
  constructor(private readonly db: Db) {}

  /** The wallets of several users in one currency, by owner id (one query). */
  async findAccount(identity: AccountIdentity): Promise<LedgerAccount | undefined> {
    const row = (await this.db('ledger_accounts').where(identityWhere(identity)).first()) as AccountRow | undefined;
    return row ? toAccount(row) : undefined;
  }

  /** The existing accounts of several identities, in one statement (identitiesJoin); answers by the identity's index. */
  async findAccounts(identities: readonly AccountIdentity[]): Promise<Map<number, LedgerAccount>> {
    const rows = await queryPrepared<AccountRow & { n: string }>(this.db, 'ledger_find_accounts', identitiesJoin('i.n, a.*'), identityArrays(identities));
    return new Map(rows.map((row) => [Number(row.n) - 1, toAccount(row)]));
  }

  async findCreditedAccount(postingId: string, kind: LedgerAccount['kind']): Promise<LedgerAccount | undefined> {
    const row = (await this.db('ledger_accounts as a')
      .join('entries as e', 'e.account_id', 'a.id')
      .where({ 'e.posting_id': postingId, 'a.kind': kind })
      .andWhere('e.amount_minor', '>', 0)
      .first('a.*')) as AccountRow | undefined;
    return row ? toAccount(row) : undefined;
  }

  /** Inserts the account unless one with the same identity exists (race-safe); returns the new row or nothing. */
  async insertAccountIfAbsent(identity: AccountIdentity, allowNegative: boolean): Promise<LedgerAccount | undefined> {
    const rows = await this.db('ledger_accounts')
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
  }

  async listAccounts(
    filter: { ownerType: OwnerType; ownerId: string | null; kind?: AccountKind; currency?: string },
  ): Promise<LedgerAccount[]> {
    const query = this.db('ledger_accounts').where({ owner_type: filter.ownerType });
    if (filter.ownerId === null) query.whereNull('owner_id');
    else query.where('owner_id', filter.ownerId);
    if (filter.kind) query.where('kind', filter.kind);
    if (filter.currency) query.where('currency', filter.currency);
    const rows = (await query.orderBy([{ column: 'currency' }, { column: 'kind' }, { column: 'created_at' }, { column: 'id' }])) as AccountRow[];
    return rows.map(toAccount);
  }

  async setAccountStatus(id: string, status: AccountStatus): Promise<boolean> {
    const count = await this.db('ledger_accounts').where({ id }).update({ status, updated_at: this.db.fn.now() });
    return count > 0;
  }

  /**
   * Records one posting through the database's `ledger_post` (one round trip): it locks the
   * touched accounts in id order, checks the posting balances per currency, refuses a frozen
   * account or a balance that may not go negative (an answer, not an error: nothing is
   * written and the transaction goes on), then moves the balances and writes the posting and
   * its entries (stored, and returned, in account id order).
   */
  async post(
    posting: { kind: string; reference: string; metadata: Record<string, unknown>; reversesPostingId: string | null; allowFrozen: boolean },
    entries: Array<{ accountId: string; amountMinor: bigint }>,
  ): Promise<PostingResult> {
    const [row] = await queryPrepared<LedgerPostRow>(this.db, 'ledger_post', LEDGER_POST_SQL, [
      posting.kind,
      posting.reference,
      JSON.stringify(posting.metadata),
      posting.reversesPostingId,
      entries.map((entry) => entry.accountId),
      entries.map((entry) => entry.amountMinor.toString()),
      posting.allowFrozen,
    ]);
    const result = row as LedgerPostRow;
    if (result.refusal) return { refusal: result.refusal, detail: result.refusal_detail } as PostingResult;
    const createdAt = result.created_at;
    return {
      refusal: null,
      posting: { id: result.posting_id, kind: posting.kind, reference: posting.reference, metadata: posting.metadata, reverses_posting_id: posting.reversesPostingId, created_at: createdAt },
      entries: result.entry_ids.map((id, i) => ({
        id: String(id),
        postingId: result.posting_id,
        accountId: result.entry_accounts[i] as string,
        currency: result.entry_currencies[i] as string,
        amountMinor: toBigInt(result.entry_amounts[i] as string),
        createdAt,
      })),
      balancesAfter: new Map(result.balance_accounts.map((id, i) => [id, toBigInt(result.balances[i] as string)])),
    };
  }

  /** Every invariant violation over the whole ledger, read from one snapshot. */
  async invariantViolations(): Promise<InvariantViolation[]> {
    const violations: InvariantViolation[] = [];
    const currencies = await this.db('entries')
      .select('currency')
      .sum({ total: 'amount_minor' })
      .groupBy('currency')
      .havingRaw('sum(amount_minor) <> 0');
    for (const row of currencies as Array<{ currency: string; total: string }>) {
      violations.push({ kind: 'currency_unbalanced', currency: row.currency, sumMinor: toBigInt(row.total) });
    }
    const postings = await this.db('entries')
      .select('posting_id', 'currency')
      .sum({ total: 'amount_minor' })
      .groupBy('posting_id', 'currency')
      .havingRaw('sum(amount_minor) <> 0');
    for (const row of postings as Array<{ posting_id: string; currency: string; total: string }>) {
      violations.push({ kind: 'posting_unbalanced', postingId: row.posting_id, currency: row.currency, sumMinor: toBigInt(row.total) });
    }
    const mismatches = await this.db.raw(`
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
    const negatives = (await this.db('ledger_accounts').where('allow_negative', false).andWhere('balance_minor', '<', 0)) as AccountRow[];
    for (const row of negatives) {
      violations.push({ kind: 'negative_balance', accountId: row.id, balanceMinor: toBigInt(row.balance_minor) });
    }
    return violations;
  }
}
