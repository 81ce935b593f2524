import { formatMinor } from '../ledger';
import type { OrgAccount, StatementLine } from './account-types';

/** All but the last 4 characters masked ('******7890'); short numbers show fewer. */
export function maskAccountNumber(value: string | null): string | null {
  if (!value) return null;
  const visible = Math.min(4, Math.max(0, value.length - 4));
  return '*'.repeat(value.length - visible) + value.slice(value.length - visible);
}

/** Country, check digits and the last 4 characters visible, in groups of 4: 'FR76 **** **** **** **** ***0 189'. */
export function maskIban(value: string | null): string | null {
  if (!value) return null;
  const masked = value.slice(0, 4) + '*'.repeat(value.length - 8) + value.slice(-4);
  return masked.match(/.{1,4}/g)?.join(' ') ?? masked;
}

export interface ApiAccount {
  id: string;
  currency_code: string;
  status: OrgAccount['status'];
  holder_type: OrgAccount['holderType'];
  label: string;
  bank_name: string | null;
  account_number_masked: string | null;
  iban_masked: string | null;
  balance: string;
  available_balance: string;
  created_at: string;
}

/**
 * The API shape of an account. `balance` is the ledger balance; `available_balance` is the
 * part that can be used now: the balance for an active account whose ledger account is not
 * frozen, zero otherwise (the ledger has no holds yet).
 */
export function presentAccount(account: OrgAccount): ApiAccount {
  const usable = account.status === 'active' && account.ledgerStatus === 'active';
  return {
    id: account.id,
    currency_code: account.currency,
    status: account.status,
    holder_type: account.holderType,
    label: account.label,
    bank_name: account.bankName,
    account_number_masked: maskAccountNumber(account.accountNumber),
    iban_masked: maskIban(account.iban),
    balance: formatMinor(account.balanceMinor, account.exponent),
    available_balance: formatMinor(usable ? account.balanceMinor : 0n, account.exponent),
    created_at: account.createdAt.toISOString(),
  };
}

export interface ApiStatementLine {
  entry_id: string;
  posting_id: string;
  posting_kind: string;
  booked_at: string;
  description: string;
  counterparty: string | null;
  amount: string;
  running_balance: string;
}

export function presentLine(line: StatementLine, exponent: number): ApiStatementLine {
  return {
    entry_id: line.entryId,
    posting_id: line.postingId,
    posting_kind: line.postingKind,
    booked_at: line.bookedAt,
    description: line.description,
    counterparty: line.counterparty,
    amount: formatMinor(line.amountMinor, exponent),
    running_balance: formatMinor(line.runningBalanceMinor, exponent),
  };
}

// ---- CSV (RFC 4180) ----

export const CSV_COLUMNS = ['type', 'entry_id', 'posting_id', 'posting_kind', 'booked_at', 'description', 'counterparty', 'amount', 'running_balance', 'currency'] as const;

/**
 * Every cell is quoted (inner quotes doubled), so no separator a spreadsheet might assume
 * (`,` or `;`) or line break inside a value can start another cell or row.
 */
export function csvCell(value: string | null): string {
  return `"${(value ?? '').replace(/"/g, '""')}"`;
}

/** An amount as this API writes it: never a formula, whatever its sign. */
const PLAIN_NUMBER = /^-?[0-9]+(\.[0-9]+)?$/;

/**
 * A cell a spreadsheet would run as a formula (leading `=`, `+`, `-`, `@`, tab or carriage
 * return) gets a leading apostrophe, as OWASP advises for CSV injection; plain numbers stay
 * as they are, so amounts keep their sign.
 */
export function neutraliseFormula(value: string | null): string | null {
  if (value == null || PLAIN_NUMBER.test(value)) return value;
  return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
}

/** One CSV record: every cell neutralised, then quoted. */
export function csvRow(cells: Array<string | null>): string {
  return `${cells.map((cell) => csvCell(neutraliseFormula(cell))).join(',')}\r\n`;
}

export function csvHeader(): string {
  return csvRow([...CSV_COLUMNS]);
}

export function csvLine(line: StatementLine, exponent: number, currency: string): string {
  return csvRow([
    'entry',
    line.entryId,
    line.postingId,
    line.postingKind,
    line.bookedAt,
    line.description,
    line.counterparty,
    formatMinor(line.amountMinor, exponent),
    formatMinor(line.runningBalanceMinor, exponent),
    currency,
  ]);
}

export function csvBalanceRow(type: 'opening_balance' | 'closing_balance', at: Date, balanceMinor: bigint, exponent: number, currency: string): string {
  const label = type === 'opening_balance' ? 'Opening balance' : 'Closing balance';
  return csvRow([type, null, null, null, at.toISOString(), label, null, null, formatMinor(balanceMinor, exponent), currency]);
}

/** statement-<account>-<from>-<to>.csv with compact UTC times (20261001T000000Z). */
export function statementFilename(accountId: string, from: Date, to: Date): string {
  const compact = (date: Date) => date.toISOString().replace(/\.\d+Z$/, 'Z').replace(/[-:]/g, '');
  return `statement-${accountId}-${compact(from)}-${compact(to)}.csv`;
}
