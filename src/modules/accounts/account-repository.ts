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

export interface NewAccountRow {
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
}

/** Knex queries of organisation accounts (balances come from their ledger accounts). */
export class AccountRepository {
  constructor(private readonly db: Db) {}

  async insert(row: NewAccountRow): Promise<void> {
    await this.db('organization_accounts').insert({
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
  }

  /** The account when it belongs to the organisation; undefined when unknown or foreign. */
  async findForOrganization(organizationId: string, accountId: string, options: { forUpdate?: boolean } = {}): Promise<OrgAccount | undefined> {
    const query = accountsQuery(this.db).where({ 'oa.id': accountId, 'oa.organization_id': organizationId });
    if (options.forUpdate) query.forUpdate('oa');
    const row = (await query.first()) as AccountRow | undefined;
    return row ? toAccount(row) : undefined;
  }

  /** The organisation's accounts, newest first. */
  async listForOrganization(organizationId: string, limit: number): Promise<OrgAccount[]> {
    const rows = (await accountsQuery(this.db)
      .where('oa.organization_id', organizationId)
      .orderBy([
        { column: 'oa.created_at', order: 'desc' },
        { column: 'oa.id', order: 'desc' },
      ])
      .limit(limit)) as AccountRow[];
    return rows.map(toAccount);
  }

  /** The labels of the organisation accounts behind these ledger accounts, by ledger account id. */
  async labelsByLedgerAccount(ledgerAccountIds: readonly string[]): Promise<Map<string, string>> {
    if (ledgerAccountIds.length === 0) return new Map();
    const rows = (await this.db('organization_accounts')
      .whereIn('ledger_account_id', [...new Set(ledgerAccountIds)])
      .select('ledger_account_id', 'label')) as Array<{ ledger_account_id: string; label: string }>;
    return new Map(rows.map((row) => [row.ledger_account_id, row.label]));
  }
}
