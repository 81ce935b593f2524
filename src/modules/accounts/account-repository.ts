import type { Knex } from 'knex';
import { toBigInt } from '../ledger';
import type { HolderType, OrgAccount, OrgAccountStatus } from './account-types';

type Db = Knex | Knex.Transaction;

interface AccountRow {
  id: string;
  organization_id: string;
  currency: string;
  exponent: number | string;
  status: OrgAccountStatus;
  holder_type: HolderType;
  label: string;
  bank_name: string | null;
  account_number: string | null;
  iban: string | null;
  ledger_account_id: string;
  balance_minor: string | number;
  ledger_status: 'active' | 'frozen';
  created_at: Date;
  updated_at: Date;
}

/** A raw statement row, before the service turns it into a line with a running balance. */
export interface StatementRow {
  id: string;
  posting_id: string;
  posting_kind: string;
  booked_at: string;
  amount_minor: string | number;
  meta_description: string | null;
  meta_reference: string | null;
  meta_counterparty: string | null;
  counterparty_kind: string | null;
  counterparty_owner_type: string | null;
  counterparty_external_ref: string | null;
  counterparty_org_id: string | null;
  counterparty_org_name: string | null;
  counterparty_account_label: string | null;
}

/** Position in the (created_at, id) order of an account's entries. */
export interface StatementCursor {
  bookedAt: string;
  entryId: string;
}

function toAccount(row: AccountRow): OrgAccount {
  return {
    id: row.id,
    organizationId: row.organization_id,
    currency: row.currency.trim(),
    exponent: Number(row.exponent),
    status: row.status,
    holderType: row.holder_type,
    label: row.label,
    bankName: row.bank_name,
    accountNumber: row.account_number,
    iban: row.iban,
    ledgerAccountId: row.ledger_account_id,
    balanceMinor: toBigInt(row.balance_minor),
    ledgerStatus: row.ledger_status,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function accountsQuery(db: Db) {
  return db('organization_accounts as oa')
    .join('ledger_accounts as la', 'la.id', 'oa.ledger_account_id')
    .join('currencies as c', 'c.code', 'oa.currency')
    .select(
      'oa.id',
      'oa.organization_id',
      'oa.currency',
      'c.exponent',
      'oa.status',
      'oa.holder_type',
      'oa.label',
      'oa.bank_name',
      'oa.account_number',
      'oa.iban',
      'oa.ledger_account_id',
      'la.balance_minor',
      'la.status as ledger_status',
      'oa.created_at',
      'oa.updated_at',
    );
}

/** ISO 8601 UTC with microseconds: exact, so it can serve as a keyset cursor. */
const BOOKED_AT = `to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** Knex queries of organisation accounts and their statements. */
export const accountRepository = {
  async insert(
    trx: Knex.Transaction,
    row: {
      id: string;
      organizationId: string;
      currency: string;
      status: OrgAccountStatus;
      holderType: HolderType;
      label: string;
      bankName: string | null;
      accountNumber: string | null;
      iban: string | null;
      ledgerAccountId: string;
    },
  ): Promise<void> {
    await trx('organization_accounts').insert({
      id: row.id,
      organization_id: row.organizationId,
      currency: row.currency,
      status: row.status,
      holder_type: row.holderType,
      label: row.label,
      bank_name: row.bankName,
      account_number: row.accountNumber,
      iban: row.iban,
      ledger_account_id: row.ledgerAccountId,
    });
  },

  /** The account when it belongs to the organisation; undefined when unknown or foreign. */
  async findForOrganization(db: Db, organizationId: string, accountId: string, options: { forUpdate?: boolean } = {}): Promise<OrgAccount | undefined> {
    const query = accountsQuery(db).where({ 'oa.id': accountId, 'oa.organization_id': organizationId });
    if (options.forUpdate) query.forUpdate('oa');
    const row = (await query.first()) as AccountRow | undefined;
    return row ? toAccount(row) : undefined;
  },

  /** The organisation's accounts, newest first. */
  async listForOrganization(db: Db, organizationId: string, limit: number): Promise<OrgAccount[]> {
    const rows = (await accountsQuery(db)
      .where('oa.organization_id', organizationId)
      .orderBy([
        { column: 'oa.created_at', order: 'desc' },
        { column: 'oa.id', order: 'desc' },
      ])
      .limit(limit)) as AccountRow[];
    return rows.map(toAccount);
  },

  /** Sum of the ledger account's entries booked before `before` (the opening balance). */
  async balanceBefore(db: Db, ledgerAccountId: string, before: Date): Promise<bigint> {
    const row = (await db('entries')
      .where('account_id', ledgerAccountId)
      .andWhere('created_at', '<', before)
      .first(db.raw('coalesce(sum(amount_minor), 0) AS total'))) as { total: string | number };
    return toBigInt(row.total);
  },

  /** Credits (positive), debits (negative or zero) and count of the entries in [from, to). */
  async intervalTotals(db: Db, ledgerAccountId: string, from: Date, to: Date): Promise<{ creditsMinor: bigint; debitsMinor: bigint; count: number }> {
    const row = (await db('entries')
      .where('account_id', ledgerAccountId)
      .andWhere('created_at', '>=', from)
      .andWhere('created_at', '<', to)
      .first(
        db.raw('coalesce(sum(amount_minor) FILTER (WHERE amount_minor > 0), 0) AS credits'),
        db.raw('coalesce(sum(amount_minor) FILTER (WHERE amount_minor < 0), 0) AS debits'),
        db.raw('count(*) AS count'),
      )) as { credits: string | number; debits: string | number; count: string | number };
    return { creditsMinor: toBigInt(row.credits), debitsMinor: toBigInt(row.debits), count: Number(row.count) };
  },

  /** Sum of the entries from `from` up to and including the cursor entry. */
  async sumThrough(db: Db, ledgerAccountId: string, from: Date, cursor: StatementCursor): Promise<bigint> {
    const row = (await db('entries as e')
      .where('e.account_id', ledgerAccountId)
      .andWhere('e.created_at', '>=', from)
      .andWhereRaw('(e.created_at, e.id) <= (?::timestamptz, ?::bigint)', [cursor.bookedAt, cursor.entryId])
      .first(db.raw('coalesce(sum(e.amount_minor), 0) AS total'))) as { total: string | number };
    return toBigInt(row.total);
  },

  /** The cursor of one entry of the ledger account, or undefined when it is not one of its entries. */
  async entryCursor(db: Db, ledgerAccountId: string, entryId: string): Promise<StatementCursor | undefined> {
    const row = (await db('entries as e')
      .where({ 'e.id': entryId, 'e.account_id': ledgerAccountId })
      .first('e.id', db.raw(`${BOOKED_AT} AS booked_at`))) as { id: string | number; booked_at: string } | undefined;
    return row ? { entryId: String(row.id), bookedAt: row.booked_at } : undefined;
  },

  /**
   * One keyset batch of the account's entries in [from, to), in (created_at, id) order, after
   * `after` when given. Each row carries its posting and the main counterparty: the other
   * account of the posting on the opposite side with the largest amount.
   */
  async statementBatch(
    db: Db,
    ledgerAccountId: string,
    interval: { from: Date; to: Date },
    after: StatementCursor | undefined,
    limit: number,
  ): Promise<StatementRow[]> {
    const bindings: Knex.RawBinding[] = [ledgerAccountId, interval.from, interval.to];
    let keyset = '';
    if (after) {
      keyset = 'AND (e.created_at, e.id) > (?::timestamptz, ?::bigint)';
      bindings.push(after.bookedAt, after.entryId);
    }
    bindings.push(limit);
    const result = await db.raw(
      `SELECT e.id, e.posting_id, p.kind AS posting_kind, ${BOOKED_AT} AS booked_at, e.amount_minor,
              p.metadata->>'description' AS meta_description,
              p.metadata->>'reference' AS meta_reference,
              p.metadata->>'counterparty' AS meta_counterparty,
              la.kind AS counterparty_kind, la.owner_type AS counterparty_owner_type,
              la.external_ref AS counterparty_external_ref,
              CASE WHEN la.owner_type = 'organization' THEN la.owner_id END AS counterparty_org_id,
              org.name AS counterparty_org_name, oa.label AS counterparty_account_label
         FROM entries e
         JOIN postings p ON p.id = e.posting_id
         LEFT JOIN LATERAL (
           SELECT o.account_id FROM entries o
            WHERE o.posting_id = e.posting_id AND o.account_id <> e.account_id
            ORDER BY (sign(o.amount_minor) = -sign(e.amount_minor)) DESC, abs(o.amount_minor) DESC, o.id
            LIMIT 1
         ) other ON true
         LEFT JOIN ledger_accounts la ON la.id = other.account_id
         LEFT JOIN organizations org ON la.owner_type = 'organization' AND org.id = la.owner_id
         LEFT JOIN organization_accounts oa ON oa.ledger_account_id = la.id
        WHERE e.account_id = ? AND e.created_at >= ? AND e.created_at < ? ${keyset}
        ORDER BY e.created_at, e.id
        LIMIT ?`,
      bindings,
    );
    return (result.rows as StatementRow[]).map((row) => ({ ...row, id: String(row.id) }));
  },
};
