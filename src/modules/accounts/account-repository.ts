import type { Knex } from 'knex';
import type { HolderType, OrgAccount, OrgAccountStatus } from './account-types';

type Db = Knex | Knex.Transaction;

/** An account as stored here; its balance, ledger status and currency exponent are the ledger's. */
export type AccountRecord = Omit<OrgAccount, 'exponent' | 'balanceMinor' | 'ledgerStatus'>;

interface AccountRow {
  id: string;
  organization_id: string;
  currency: string;
  status: OrgAccountStatus;
  holder_type: HolderType;
  label: string;
  bank_name: string | null;
  account_number: string | null;
  iban: string | null;
  ledger_account_id: string;
  created_at: Date;
  updated_at: Date;
}

function toRecord(row: AccountRow): AccountRecord {
  return {
    id: row.id,
    organizationId: row.organization_id,
    currency: row.currency.trim(),
    status: row.status,
    holderType: row.holder_type,
    label: row.label,
    bankName: row.bank_name,
    accountNumber: row.account_number,
    iban: row.iban,
    ledgerAccountId: row.ledger_account_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

const ACCOUNT_COLUMNS = ['id', 'organization_id', 'currency', 'status', 'holder_type', 'label', 'bank_name', 'account_number', 'iban', 'ledger_account_id', 'created_at', 'updated_at'];

export type NewAccountRow = Pick<OrgAccount, 'id' | 'organizationId' | 'currency' | 'status' | 'holderType' | 'label' | 'bankName' | 'accountNumber' | 'iban' | 'ledgerAccountId'>;

/** Knex queries of the organisation_accounts table. */
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
  async findForOrganization(organizationId: string, accountId: string, options: { forUpdate?: boolean } = {}): Promise<AccountRecord | undefined> {
    const query = this.db('organization_accounts').where({ id: accountId, organization_id: organizationId });
    if (options.forUpdate) query.forUpdate();
    const row = (await query.first(ACCOUNT_COLUMNS)) as AccountRow | undefined;
    return row ? toRecord(row) : undefined;
  }

  /** The organisation's accounts, newest first. */
  async listForOrganization(organizationId: string, limit: number): Promise<AccountRecord[]> {
    const rows = (await this.db('organization_accounts')
      .where('organization_id', organizationId)
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(limit)
      .select(ACCOUNT_COLUMNS)) as AccountRow[];
    return rows.map(toRecord);
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
