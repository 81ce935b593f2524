import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { NotFoundError, ValidationError, type FieldIssue } from '../../errors';
import { withTransaction } from '../../db/transaction';
import { currencies, ensureAccount } from '../ledger';
import { accountRepository, type StatementCursor } from './account-repository';
import {
  ACCOUNT_STATUSES,
  HOLDER_TYPES,
  type CreateOrgAccountInput,
  type OrgAccount,
  type StatementHeader,
  type StatementInterval,
  type StatementLine,
} from './account-types';
import { describeCounterparty, describePosting } from './statement-lines';

type Db = Knex | Knex.Transaction;

const DAY_MS = 86_400_000;
/** Largest PostgreSQL bigint (ledger entry ids, hence statement cursors). */
const MAX_BIGINT = 9_223_372_036_854_775_807n;
/** Longest statement interval, as Wise: 469 days. */
export const MAX_STATEMENT_DAYS = 469;
/** Interval when `from` is absent: the 30 days before `to`. */
export const DEFAULT_STATEMENT_DAYS = 30;
/** JSON statements are pages of at most this many lines (CSV streams the whole interval). */
export const MAX_STATEMENT_PAGE = 1000;
export const DEFAULT_STATEMENT_PAGE = 500;
/** Rows fetched per keyset batch when streaming. */
export const STATEMENT_BATCH_SIZE = 1000;
/** More accounts than this per organisation is not a supported shape (the list is one page). */
export const MAX_ACCOUNTS_PER_ORGANIZATION = 500;

export interface StatementRange {
  from?: string | Date;
  to?: string | Date;
}

export interface StatementPageQuery extends StatementRange {
  limit?: number;
  /** Entry id of the last line of the previous page. */
  startingAfter?: string;
}

export interface StatementPage extends StatementHeader {
  closingBalanceMinor: bigint;
  totalCreditsMinor: bigint;
  totalDebitsMinor: bigint;
  entryCount: number;
  lines: StatementLine[];
  hasMore: boolean;
  nextCursor: string | null;
}

export interface StatementSummary {
  closingBalanceMinor: bigint;
  totalCreditsMinor: bigint;
  totalDebitsMinor: bigint;
  entryCount: number;
}

/**
 * Where a streamed statement goes (the HTTP handler writes CSV). Every method may wait (back
 * pressure); `aborted()` true stops the stream (the client went away).
 */
export interface StatementSink {
  start(header: StatementHeader): Promise<void>;
  lines(lines: StatementLine[]): Promise<void>;
  end(summary: StatementSummary): Promise<void>;
  aborted(): boolean;
}

function parseInstant(value: string | Date | undefined, field: string, issues: FieldIssue[]): Date | undefined {
  if (value === undefined) return undefined;
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) {
    issues.push({ field, message: `${field} must be an ISO 8601 date-time with a time zone, such as 2026-01-31T00:00:00Z.` });
    return undefined;
  }
  return date;
}

/**
 * The statement interval [from, to): `to` defaults to now, `from` to 30 days before `to`.
 * Refuses from >= to and intervals longer than 469 days with a 400 ValidationError.
 */
export function resolveInterval(range: StatementRange, now: Date = new Date()): StatementInterval {
  const issues: FieldIssue[] = [];
  const fromGiven = parseInstant(range.from, 'from', issues);
  const toGiven = parseInstant(range.to, 'to', issues);
  if (issues.length) throw new ValidationError(issues[0]?.message ?? 'Invalid interval.', issues);
  const to = toGiven ?? now;
  const from = fromGiven ?? new Date(to.getTime() - DEFAULT_STATEMENT_DAYS * DAY_MS);
  if (from.getTime() >= to.getTime()) {
    throw ValidationError.field('from', '`from` must be earlier than `to` (the interval is [from, to)).');
  }
  if (to.getTime() - from.getTime() > MAX_STATEMENT_DAYS * DAY_MS) {
    throw ValidationError.field('to', `A statement covers at most ${MAX_STATEMENT_DAYS} days: shorten the interval between \`from\` and \`to\`.`);
  }
  return { from, to };
}

function normaliseText(value: string | null | undefined, field: string, max: number, issues: FieldIssue[], required: boolean): string | null {
  if (value == null || value.trim() === '') {
    if (required) issues.push({ field, message: `${field} is required.` });
    return null;
  }
  const text = value.trim();
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1F\x7F]/.test(text)) issues.push({ field, message: `${field} must not contain control characters.` });
  if (text.length > max) issues.push({ field, message: `${field} is at most ${max} characters.` });
  return text;
}

/** ISO 13616 check: move the first four characters to the end, letters to numbers, mod 97 = 1. */
export function isValidIban(iban: string): boolean {
  if (!/^[A-Z]{2}[0-9]{2}[0-9A-Z]{11,30}$/.test(iban)) return false;
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const char of rearranged) {
    const code = char.charCodeAt(0);
    const digits = code >= 65 ? String(code - 55) : char;
    for (const digit of digits) remainder = (remainder * 10 + Number(digit)) % 97;
  }
  return remainder === 1;
}

function validateCreate(input: CreateOrgAccountInput) {
  const issues: FieldIssue[] = [];
  const status = input.status ?? 'active';
  if (!ACCOUNT_STATUSES.includes(status)) issues.push({ field: 'status', message: `status is one of ${ACCOUNT_STATUSES.join(', ')}.` });
  const holderType = input.holderType ?? 'business';
  if (!HOLDER_TYPES.includes(holderType)) issues.push({ field: 'holder_type', message: `holder_type is one of ${HOLDER_TYPES.join(', ')}.` });
  const label = normaliseText(input.label, 'label', 100, issues, true) as string;
  const bankName = normaliseText(input.bankName, 'bank_name', 140, issues, false);
  let accountNumber: string | null = null;
  if (input.accountNumber != null && input.accountNumber.trim() !== '') {
    accountNumber = input.accountNumber.replace(/[\s-]+/g, '').toUpperCase();
    if (!/^[0-9A-Z]{4,34}$/.test(accountNumber)) {
      issues.push({ field: 'account_number', message: 'account_number is 4 to 34 letters or digits.' });
    }
  }
  let iban: string | null = null;
  if (input.iban != null && input.iban.trim() !== '') {
    iban = input.iban.replace(/\s+/g, '').toUpperCase();
    if (!isValidIban(iban)) issues.push({ field: 'iban', message: 'iban is not a valid IBAN (format or check digits).' });
  }
  if (issues.length) throw new ValidationError(issues[0]?.message ?? 'Invalid account.', issues);
  return { status, holderType, label, bankName, accountNumber, iban };
}

/**
 * Organisation (foreign-currency) accounts and their statements. Each account has its own
 * ledger account (kind `org_account`, external_ref = the account id); balances and statement
 * lines are read from the ledger, never stored here.
 */
export class AccountService {
  constructor(private readonly knex: Knex) {}

  /**
   * Creates an account and its ledger account in the caller's transaction (the seed, test
   * factories, and later an account-opening flow). Validates every field (400 ValidationError).
   */
  async createAccount(trx: Knex.Transaction, input: CreateOrgAccountInput): Promise<OrgAccount> {
    const fields = validateCreate(input);
    const currency = await currencies.require(trx, input.currency, 'currency');
    const id = crypto.randomUUID();
    const ledger = await ensureAccount(trx, {
      ownerType: 'organization',
      ownerId: input.organizationId,
      currency: currency.code,
      kind: 'org_account',
      externalRef: id,
    });
    await accountRepository.insert(trx, { id, organizationId: input.organizationId, currency: currency.code, ledgerAccountId: ledger.id, ...fields });
    const created = await accountRepository.findForOrganization(trx, input.organizationId, id);
    if (!created) throw new Error(`organisation account ${id} vanished after its insert`);
    return created;
  }

  /** The account when it belongs to the organisation, otherwise undefined (unknown or foreign alike). */
  findAccountForOrganization(organizationId: string, accountId: string, db: Db = this.knex, options: { forUpdate?: boolean } = {}): Promise<OrgAccount | undefined> {
    if (!isUuid(accountId)) return Promise.resolve(undefined);
    return accountRepository.findForOrganization(db, organizationId, accountId, options);
  }

  /**
   * The account when it belongs to the organisation; 404 `AccountNotFound` when it is unknown
   * or belongs to another organisation (both answer the same). Pass `db` to read inside a
   * transaction and `forUpdate` to lock the row.
   */
  async getAccountForOrganization(organizationId: string, accountId: string, db: Db = this.knex, options: { forUpdate?: boolean } = {}): Promise<OrgAccount> {
    const account = await this.findAccountForOrganization(organizationId, accountId, db, options);
    if (!account) throw new NotFoundError('Account not found in this organisation.', 'AccountNotFound');
    return account;
  }

  /** The organisation's accounts with their ledger balances, newest first. */
  listAccounts(organizationId: string): Promise<OrgAccount[]> {
    return accountRepository.listForOrganization(this.knex, organizationId, MAX_ACCOUNTS_PER_ORGANIZATION);
  }

  /**
   * One page of a statement (JSON): the interval's opening and closing balances and totals,
   * and up to `limit` lines after `startingAfter`, each with its running balance. All read
   * from one snapshot (REPEATABLE READ), so opening + every line = closing.
   */
  async statementPage(organizationId: string, accountId: string, query: StatementPageQuery): Promise<StatementPage> {
    const interval = resolveInterval(query);
    const limit = query.limit ?? DEFAULT_STATEMENT_PAGE;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_STATEMENT_PAGE) {
      throw ValidationError.field('limit', `limit is an integer from 1 to ${MAX_STATEMENT_PAGE}.`);
    }
    return withTransaction(
      this.knex,
      async (trx) => {
        const account = await this.getAccountForOrganization(organizationId, accountId, trx);
        let after: StatementCursor | undefined;
        if (query.startingAfter !== undefined) {
          after = await this.cursorWithin(trx, account, interval, query.startingAfter);
        }
        const opening = await accountRepository.balanceBefore(trx, account.ledgerAccountId, interval.from);
        const totals = await accountRepository.intervalTotals(trx, account.ledgerAccountId, interval.from, interval.to);
        let running = opening;
        if (after) running += await accountRepository.sumThrough(trx, account.ledgerAccountId, interval.from, after);
        const rows = await accountRepository.statementBatch(trx, account.ledgerAccountId, interval, after, limit + 1);
        const hasMore = rows.length > limit;
        const lines = this.toLines(rows.slice(0, limit), organizationId, running);
        return {
          account,
          interval,
          openingBalanceMinor: opening,
          closingBalanceMinor: opening + totals.creditsMinor + totals.debitsMinor,
          totalCreditsMinor: totals.creditsMinor,
          totalDebitsMinor: totals.debitsMinor,
          entryCount: totals.count,
          lines,
          hasMore,
          nextCursor: hasMore ? (lines[lines.length - 1]?.entryId ?? null) : null,
        };
      },
      { isolationLevel: 'repeatable read', readOnly: true, retries: 0 },
    );
  }

  /**
   * Streams the whole statement of the interval to `sink` in keyset batches of
   * STATEMENT_BATCH_SIZE rows, inside one read-only REPEATABLE READ transaction (one snapshot:
   * the closing balance is exactly opening + the lines). Memory holds one batch at a time.
   * Errors before `sink.start` (404, 400) reach the caller untouched, before anything is sent.
   */
  async streamStatement(organizationId: string, accountId: string, range: StatementRange, sink: StatementSink, batchSize = STATEMENT_BATCH_SIZE): Promise<void> {
    const interval = resolveInterval(range);
    await withTransaction(
      this.knex,
      async (trx) => {
        const account = await this.getAccountForOrganization(organizationId, accountId, trx);
        const opening = await accountRepository.balanceBefore(trx, account.ledgerAccountId, interval.from);
        let rows = await accountRepository.statementBatch(trx, account.ledgerAccountId, interval, undefined, batchSize);
        await sink.start({ account, interval, openingBalanceMinor: opening });
        let running = opening;
        let credits = 0n;
        let debits = 0n;
        let count = 0;
        while (rows.length > 0) {
          if (sink.aborted()) return;
          const lines = this.toLines(rows, organizationId, running);
          for (const line of lines) {
            if (line.amountMinor > 0n) credits += line.amountMinor;
            else debits += line.amountMinor;
          }
          count += lines.length;
          const last = lines[lines.length - 1] as StatementLine;
          running = last.runningBalanceMinor;
          await sink.lines(lines);
          if (rows.length < batchSize) break;
          rows = await accountRepository.statementBatch(trx, account.ledgerAccountId, interval, { bookedAt: last.bookedAt, entryId: last.entryId }, batchSize);
        }
        if (sink.aborted()) return;
        await sink.end({ closingBalanceMinor: running, totalCreditsMinor: credits, totalDebitsMinor: debits, entryCount: count });
      },
      { isolationLevel: 'repeatable read', readOnly: true, retries: 0 },
    );
  }

  private async cursorWithin(trx: Knex.Transaction, account: OrgAccount, interval: StatementInterval, entryId: string): Promise<StatementCursor> {
    const invalid = ValidationError.field('starting_after', 'starting_after must be the entry_id of a line of this statement (its next_cursor).');
    // Entry ids are bigint: a 19-digit value above its maximum is no entry (and PostgreSQL would
    // raise 22003 comparing it with the id column).
    if (!/^[1-9][0-9]{0,18}$/.test(entryId) || BigInt(entryId) > MAX_BIGINT) throw invalid;
    const cursor = await accountRepository.entryCursor(trx, account.ledgerAccountId, entryId);
    if (!cursor) throw invalid;
    const at = new Date(cursor.bookedAt).getTime();
    if (at < interval.from.getTime() || at >= interval.to.getTime()) throw invalid;
    return cursor;
  }

  private toLines(rows: Awaited<ReturnType<typeof accountRepository.statementBatch>>, organizationId: string, openingMinor: bigint): StatementLine[] {
    let running = openingMinor;
    return rows.map((row) => {
      const amountMinor = BigInt(row.amount_minor);
      running += amountMinor;
      return {
        entryId: row.id,
        postingId: row.posting_id,
        postingKind: row.posting_kind,
        bookedAt: row.booked_at,
        description: describePosting(row),
        counterparty: describeCounterparty(row, organizationId),
        amountMinor,
        runningBalanceMinor: running,
      };
    });
  }
}

function isUuid(value: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
}
