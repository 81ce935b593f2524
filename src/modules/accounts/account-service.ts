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
import { purposeMacBytes, safeEqual } from '../../signing';
import { StreamBudget, type StreamBudgetLimits } from '../../stream-budget';

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
/**
 * A statement never reaches closer to now than this: an entry's created_at is its
 * transaction's start, so a posting still in flight can later appear with a created_at in the
 * past. Postings are short (seconds); past this margin the interval no longer changes.
 */
export const STATEMENT_SETTLE_MARGIN_MS = 15_000;
/** How long a CSV stream waits for a stalled client to read before it cuts the connection. */
export const DEFAULT_STREAM_STALL_TIMEOUT_MS = 30_000;
export const DEFAULT_STREAM_LIMITS: StreamBudgetLimits = { perCaller: 2, total: 4, retryAfterSeconds: 5 };

export interface AccountServiceOptions {
  /** Signs the statement cursors (the configured PAY_SECRET). */
  cursorSecret: string;
  /** The clock (tests inject one). */
  now?: () => Date;
  settleMarginMs?: number;
  /** See DEFAULT_STREAM_STALL_TIMEOUT_MS; the CSV writer uses it. */
  streamStallTimeoutMs?: number;
  /** How many CSV statements may stream at once, per caller and in total. */
  streams?: StreamBudget;
}

export interface StatementRange {
  from?: string | Date;
  to?: string | Date;
}

export interface StatementPageQuery extends StatementRange {
  limit?: number;
  /** The previous page's next_cursor (opaque: see encodeStatementCursor). */
  startingAfter?: string;
}

/** What a statement cursor carries: the last line's entry and the interval of the pages. */
export interface StatementPageCursor {
  entryId: string;
  from: Date;
  to: Date;
  /** The `to` the first page was asked with when it was capped to the settle margin. */
  requestedTo: Date | null;
}

const CURSOR_PATTERN = /^v1:([1-9][0-9]{0,18}):(-?[0-9]{1,16}):(-?[0-9]{1,16}):(-?[0-9]{1,16})?$/;
/** The HMAC purpose of statement cursors (see src/signing.ts). */
const CURSOR_PURPOSE = 'accounts/statement-cursor';
const CURSOR_MAC_BYTES = 32;
/** Longest cursor: a 76-byte body and its 32-byte signature, base64url. */
const MAX_STATEMENT_CURSOR_LENGTH = 192;

/**
 * Opaque to clients: base64url of `v1:<entry id>:<from ms>:<to ms>:<requested to ms>` followed
 * by its HMAC-SHA256 under `secret` (PAY_SECRET), so a cursor that was forged or altered is
 * refused rather than read.
 */
export function encodeStatementCursor(secret: string, cursor: StatementPageCursor): string {
  const raw = Buffer.from(`v1:${cursor.entryId}:${cursor.from.getTime()}:${cursor.to.getTime()}:${cursor.requestedTo?.getTime() ?? ''}`, 'utf8');
  return Buffer.concat([raw, purposeMacBytes(secret, CURSOR_PURPOSE, raw)]).toString('base64url');
}

/** The cursor, or undefined when `value` is not one this API signed (forged, altered or truncated). */
export function decodeStatementCursor(secret: string, value: string): StatementPageCursor | undefined {
  if (value.length > MAX_STATEMENT_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(value)) return undefined;
  const bytes = Buffer.from(value, 'base64url');
  if (bytes.length <= CURSOR_MAC_BYTES) return undefined;
  const raw = bytes.subarray(0, bytes.length - CURSOR_MAC_BYTES);
  if (!safeEqual(purposeMacBytes(secret, CURSOR_PURPOSE, raw), bytes.subarray(raw.length))) return undefined;
  const match = CURSOR_PATTERN.exec(raw.toString('utf8'));
  if (!match) return undefined;
  const [, entryId, from, to, requestedTo] = match as unknown as [string, string, string, string, string | undefined];
  // Entry ids are bigint: a 19-digit value above its maximum is no entry (and PostgreSQL would
  // raise 22003 comparing it with the id column).
  if (BigInt(entryId) > MAX_BIGINT) return undefined;
  const dates = [from, to, requestedTo].map((ms) => (ms === undefined ? null : new Date(Number(ms))));
  if (dates.some((d) => d !== null && Number.isNaN(d.getTime()))) return undefined;
  return { entryId, from: dates[0] as Date, to: dates[1] as Date, requestedTo: dates[2] ?? null };
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

/** Fractional seconds beyond milliseconds that are not all zeros (2026-01-01T00:00:00.1234Z). */
const SUB_MILLISECOND = /\.[0-9]{3}([0-9]*)/;

function parseInstant(value: string | Date | undefined, name: string, issues: FieldIssue[]): Date | undefined {
  if (value === undefined) return undefined;
  const field = `query.${name}`;
  if (typeof value === 'string' && /[1-9]/.test(SUB_MILLISECOND.exec(value)?.[1] ?? '')) {
    issues.push({ field, message: `${name} is precise to the millisecond at most (three fractional digits), such as 2026-01-31T00:00:00.123Z.` });
    return undefined;
  }
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) {
    issues.push({ field, message: `${name} must be an ISO 8601 date-time with a time zone, such as 2026-01-31T00:00:00Z.` });
    return undefined;
  }
  return date;
}

/** The interval, and the `to` that was asked for when the settle margin capped it. */
export interface ResolvedInterval extends StatementInterval {
  requestedTo: Date | null;
}

/**
 * The statement interval [from, to). `settledUntil` is the latest instant a statement may
 * cover (now minus the settle margin): `to` defaults to it and is capped at it; `from`
 * defaults to 30 days before `to`. Refuses from >= to and intervals longer than 469 days with
 * a 400 ValidationError (fields named `query.<name>`).
 */
export function resolveInterval(range: StatementRange, settledUntil: Date = new Date()): ResolvedInterval {
  const issues: FieldIssue[] = [];
  const fromGiven = parseInstant(range.from, 'from', issues);
  const toGiven = parseInstant(range.to, 'to', issues);
  if (issues.length) throw new ValidationError(issues[0]?.message ?? 'Invalid interval.', issues);
  const capped = toGiven !== undefined && toGiven.getTime() > settledUntil.getTime();
  const to = toGiven === undefined || capped ? settledUntil : toGiven;
  const from = fromGiven ?? new Date(to.getTime() - DEFAULT_STATEMENT_DAYS * DAY_MS);
  if (from.getTime() >= to.getTime()) {
    const detail = to === settledUntil ? ` (\`to\` defaults to and is capped at ${settledUntil.toISOString()}: entries of the last seconds are not final yet)` : '';
    throw ValidationError.field('query.from', `\`from\` must be earlier than \`to\` (the interval is [from, to))${detail}.`);
  }
  if (to.getTime() - from.getTime() > MAX_STATEMENT_DAYS * DAY_MS) {
    throw ValidationError.field('query.to', `A statement covers at most ${MAX_STATEMENT_DAYS} days: shorten the interval between \`from\` and \`to\`.`);
  }
  return { from, to, requestedTo: capped ? (toGiven as Date) : null };
}

/**
 * Whether [from, to) obeys the rules resolveInterval enforces: from before to, at most
 * MAX_STATEMENT_DAYS long, and not past `settledUntil`.
 */
export function isStatementInterval(interval: StatementInterval, settledUntil: Date): boolean {
  const from = interval.from.getTime();
  const to = interval.to.getTime();
  return from < to && to - from <= MAX_STATEMENT_DAYS * DAY_MS && to <= settledUntil.getTime();
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
  private readonly now: () => Date;
  private readonly cursorSecret: string;
  private readonly settleMarginMs: number;
  readonly streamStallTimeoutMs: number;
  readonly streams: StreamBudget;

  constructor(
    private readonly knex: Knex,
    options: AccountServiceOptions,
  ) {
    this.cursorSecret = options.cursorSecret;
    this.now = options.now ?? (() => new Date());
    this.settleMarginMs = options.settleMarginMs ?? STATEMENT_SETTLE_MARGIN_MS;
    this.streamStallTimeoutMs = options.streamStallTimeoutMs ?? DEFAULT_STREAM_STALL_TIMEOUT_MS;
    this.streams = options.streams ?? new StreamBudget(DEFAULT_STREAM_LIMITS);
  }

  /** The latest instant a statement covers: now minus the settle margin. */
  settledUntil(): Date {
    return new Date(this.now().getTime() - this.settleMarginMs);
  }

  /**
   * The interval of a JSON page: the request's, or with a cursor the cursor's (so the pages
   * of one statement share one interval even when `to` was defaulted or capped). A from or to
   * sent with a cursor must be the one of its first page: otherwise 400.
   */
  private pageInterval(query: StatementPageQuery): { interval: StatementInterval; requestedTo: Date | null; cursor?: StatementPageCursor } {
    if (query.startingAfter === undefined) {
      const resolved = resolveInterval(query, this.settledUntil());
      return { interval: { from: resolved.from, to: resolved.to }, requestedTo: resolved.requestedTo };
    }
    const cursor = decodeStatementCursor(this.cursorSecret, query.startingAfter);
    // A genuine cursor carries an interval resolveInterval produced; checked again all the same,
    // so no cursor, however obtained, reaches past the settle margin or the longest interval.
    if (!cursor || !isStatementInterval(cursor, this.settledUntil())) {
      throw ValidationError.field('query.starting_after', 'starting_after must be the next_cursor of a previous page of this statement.');
    }
    const issues: FieldIssue[] = [];
    const from = parseInstant(query.from, 'from', issues);
    const to = parseInstant(query.to, 'to', issues);
    if (issues.length) throw new ValidationError(issues[0]?.message ?? 'Invalid interval.', issues);
    const mismatch: FieldIssue[] = [];
    if (from !== undefined && from.getTime() !== cursor.from.getTime()) {
      mismatch.push({ field: 'query.from', message: `from differs from the interval of the cursor (${cursor.from.toISOString()}).` });
    }
    if (to !== undefined && to.getTime() !== cursor.to.getTime() && to.getTime() !== cursor.requestedTo?.getTime()) {
      mismatch.push({ field: 'query.to', message: `to differs from the interval of the cursor (${cursor.to.toISOString()}).` });
    }
    if (mismatch.length) {
      throw new ValidationError('starting_after belongs to a statement of another interval: send the same from and to as for the first page, or none.', [
        { field: 'query.starting_after', message: 'the cursor was issued for another interval' },
        ...mismatch,
      ]);
    }
    return { interval: { from: cursor.from, to: cursor.to }, requestedTo: cursor.requestedTo, cursor };
  }

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
    const { interval, requestedTo, cursor } = this.pageInterval(query);
    const limit = query.limit ?? DEFAULT_STATEMENT_PAGE;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_STATEMENT_PAGE) {
      throw ValidationError.field('query.limit', `limit is an integer from 1 to ${MAX_STATEMENT_PAGE}.`);
    }
    return withTransaction(
      this.knex,
      async (trx) => {
        const account = await this.getAccountForOrganization(organizationId, accountId, trx);
        const after = cursor ? await this.cursorWithin(trx, account, interval, cursor.entryId) : undefined;
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
          nextCursor: hasMore && lines.length > 0 ? encodeStatementCursor(this.cursorSecret, { entryId: (lines[lines.length - 1] as StatementLine).entryId, ...interval, requestedTo }) : null,
        };
      },
      { isolationLevel: 'repeatable read', readOnly: true, retries: 0 },
    );
  }

  /**
   * Streams the whole statement of the interval to `sink` in keyset batches of
   * STATEMENT_BATCH_SIZE rows. Memory holds one batch at a time. Errors before `sink.start`
   * (404, 400) reach the caller untouched, before anything is sent.
   * A database connection is held only while a batch is read, never while the sink waits for
   * a slow client, so stalled downloads cannot exhaust the pool. No snapshot is needed for
   * the lines to add up: the interval ends before the settle margin, and ledger entries are
   * immutable, so every batch (and the opening balance) reads a part of history that no
   * longer changes.
   */
  async streamStatement(organizationId: string, accountId: string, range: StatementRange, sink: StatementSink, batchSize = STATEMENT_BATCH_SIZE): Promise<void> {
    const { from, to } = resolveInterval(range, this.settledUntil());
    const interval = { from, to };
    const { account, opening, first } = await withTransaction(
      this.knex,
      async (trx) => {
        const found = await this.getAccountForOrganization(organizationId, accountId, trx);
        return {
          account: found,
          opening: await accountRepository.balanceBefore(trx, found.ledgerAccountId, interval.from),
          first: await accountRepository.statementBatch(trx, found.ledgerAccountId, interval, undefined, batchSize),
        };
      },
      { isolationLevel: 'repeatable read', readOnly: true, retries: 0 },
    );
    await sink.start({ account, interval, openingBalanceMinor: opening });
    let rows = first;
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
      if (rows.length < batchSize || sink.aborted()) break;
      rows = await accountRepository.statementBatch(this.knex, account.ledgerAccountId, interval, { bookedAt: last.bookedAt, entryId: last.entryId }, batchSize);
    }
    if (sink.aborted()) return;
    await sink.end({ closingBalanceMinor: running, totalCreditsMinor: credits, totalDebitsMinor: debits, entryCount: count });
  }

  private async cursorWithin(trx: Knex.Transaction, account: OrgAccount, interval: StatementInterval, entryId: string): Promise<StatementCursor> {
    const invalid = ValidationError.field('query.starting_after', 'starting_after must be the next_cursor of a previous page of this statement.');
    // entryId comes from decodeStatementCursor: a signed, bigint-range entry id.
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
