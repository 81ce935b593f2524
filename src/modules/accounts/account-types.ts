/** Domain types of organisation (foreign-currency) accounts; the repository maps the rows. */

export const ACCOUNT_STATUSES = ['active', 'inactive', 'pending', 'closed'] as const;
export type OrgAccountStatus = (typeof ACCOUNT_STATUSES)[number];

export const HOLDER_TYPES = ['business', 'individual'] as const;
export type HolderType = (typeof HOLDER_TYPES)[number];

export interface OrgAccount {
  id: string;
  organizationId: string;
  currency: string;
  /** Minor-unit exponent of the currency (XOF 0, EUR 2). */
  exponent: number;
  status: OrgAccountStatus;
  holderType: HolderType;
  label: string;
  bankName: string | null;
  /** Stored in full; never returned unmasked by the API (see maskAccountNumber). */
  accountNumber: string | null;
  /** Stored in full; never returned unmasked by the API (see maskIban). */
  iban: string | null;
  /** The account's own ledger account (kind org_account, external_ref = this id). */
  ledgerAccountId: string;
  /** Ledger balance in minor units. */
  balanceMinor: bigint;
  /** Status of the ledger account: a frozen one moves no money. */
  ledgerStatus: 'active' | 'frozen';
  createdAt: Date;
  updatedAt: Date;
}

export interface CreateOrgAccountInput {
  organizationId: string;
  currency: string;
  status?: OrgAccountStatus;
  holderType?: HolderType;
  label: string;
  bankName?: string | null;
  accountNumber?: string | null;
  iban?: string | null;
}

/** One line of a statement: a ledger entry of the account, with the running balance after it. */
export interface StatementLine {
  entryId: string;
  postingId: string;
  postingKind: string;
  /** ISO 8601 UTC with microseconds, exactly as stored. */
  bookedAt: string;
  description: string;
  counterparty: string | null;
  amountMinor: bigint;
  runningBalanceMinor: bigint;
}

export interface StatementInterval {
  /** Inclusive start. */
  from: Date;
  /** Exclusive end. */
  to: Date;
}

export interface StatementHeader {
  account: OrgAccount;
  interval: StatementInterval;
  openingBalanceMinor: bigint;
}
