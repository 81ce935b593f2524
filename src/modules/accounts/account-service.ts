import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { systemClock, type Clock } from '../../clock';
import { withTransaction } from '../../db/transaction';
import { NotFoundError, ValidationError, type FieldIssue } from '../../errors';
import { isUuid } from '../../ids';
import { currencies, ensureAccount, LedgerReadModel, StatementCheckpoints } from '../ledger';
import { AccountRepository, type AccountRecord } from './account-repository';
import type { CreateOrgAccountInput, OrgAccount, StatementInterval } from './account-types';
import { validateNewAccount } from './account-validation';
import { decodeStatementCursor, encodeStatementCursor, type StatementPageCursor } from './statement-cursor';
import { isStatementInterval, parseRange, resolveInterval, type StatementRange } from './statement-interval';
import { StatementReader, type StatementPageContent, type StatementSink, type StatementSummary } from './statement-reader';
import { StreamBudget, type StreamBudgetLimits } from '../../stream-budget';
import { readConnection } from '../../db/read-routing';

export type { StatementRange, StatementSink, StatementSummary };

type Db = Knex | Knex.Transaction;

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
const READ_SNAPSHOT = { isolationLevel: 'repeatable read', readOnly: true, retries: 0 } as const;

export interface AccountServiceOptions {
  /** Signs the statement cursors (the configured PAY_SECRET). */
  cursorSecret: string;
  clock?: Clock;
  settleMarginMs?: number;
  /** See DEFAULT_STREAM_STALL_TIMEOUT_MS; the CSV writer uses it. */
  streamStallTimeoutMs?: number;
  /** How many CSV statements may stream at once, per caller and in total. */
  streams?: StreamBudget;
}

export interface StatementPageQuery extends StatementRange {
  limit?: number;
  /** The previous page's next_cursor (opaque: see encodeStatementCursor). */
  startingAfter?: string;
}

export interface StatementPage extends StatementPageContent {
  nextCursor: string | null;
}

const INVALID_CURSOR = 'starting_after must be the next_cursor of a previous page of this statement.';

/**
 * Organisation (foreign-currency) accounts and their statements. Each account has its own
 * ledger account (kind `org_account`, external_ref = the account id); balances and statement
 * lines are read from the ledger, never stored here.
 */
export class AccountService {
  private readonly clock: Clock;
  private readonly cursorSecret: string;
  private readonly settleMarginMs: number;
  readonly streamStallTimeoutMs: number;
  readonly streams: StreamBudget;

  constructor(
    private readonly knex: Knex,
    options: AccountServiceOptions,
  ) {
    this.cursorSecret = options.cursorSecret;
    this.clock = options.clock ?? systemClock;
    this.settleMarginMs = options.settleMarginMs ?? STATEMENT_SETTLE_MARGIN_MS;
    this.streamStallTimeoutMs = options.streamStallTimeoutMs ?? DEFAULT_STREAM_STALL_TIMEOUT_MS;
    this.streams = options.streams ?? new StreamBudget(DEFAULT_STREAM_LIMITS);
  }

  /** The latest instant a statement covers: now minus the settle margin. */
  settledUntil(): Date {
    return new Date(this.clock().getTime() - this.settleMarginMs);
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
    if (!cursor || !isStatementInterval(cursor, this.settledUntil())) throw ValidationError.field('query.starting_after', INVALID_CURSOR);
    const { from, to } = parseRange(query);
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
   * Creates an account and its ledger account in the caller's transaction (the demo seed, test
   * factories). Validates every field (400 ValidationError).
   */
  async createAccount(trx: Knex.Transaction, input: CreateOrgAccountInput): Promise<OrgAccount> {
    const fields = validateNewAccount(input);
    const currency = await currencies.require(trx, input.currency, 'currency');
    const id = crypto.randomUUID();
    const ledger = await ensureAccount(trx, {
      ownerType: 'organization',
      ownerId: input.organizationId,
      currency: currency.code,
      kind: 'org_account',
      externalRef: id,
    });
    const accounts = new AccountRepository(trx);
    await accounts.insert({ id, organizationId: input.organizationId, currency: currency.code, ledgerAccountId: ledger.id, ...fields });
    const created = await accounts.findForOrganization(input.organizationId, id);
    if (!created) throw new Error(`organisation account ${id} vanished after its insert`);
    return (await this.withLedger(trx, [created]))[0] as OrgAccount;
  }

  /** The accounts with their ledger accounts' balances and statuses and their currency's exponent. */
  private async withLedger(db: Db, records: AccountRecord[]): Promise<OrgAccount[]> {
    const states = await new LedgerReadModel(db).accountStates(records.map((record) => record.ledgerAccountId));
    const accounts: OrgAccount[] = [];
    for (const record of records) {
      const state = states.get(record.ledgerAccountId);
      // organization_accounts.ledger_account_id references ledger_accounts: never missing.
      if (!state) throw new Error(`the ledger account of organisation account ${record.id} does not exist`);
      const { exponent } = await currencies.require(db, record.currency);
      accounts.push({ ...record, exponent, balanceMinor: state.balanceMinor, ledgerStatus: state.status });
    }
    return accounts;
  }

  /** The account when it belongs to the organisation, otherwise undefined (unknown or foreign alike). */
  async findAccountForOrganization(organizationId: string, accountId: string, db: Db = this.knex, options: { forUpdate?: boolean } = {}): Promise<OrgAccount | undefined> {
    if (!isUuid(accountId)) return undefined;
    const record = await new AccountRepository(db).findForOrganization(organizationId, accountId, options);
    return record ? (await this.withLedger(db, [record]))[0] : undefined;
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
  async listAccounts(organizationId: string): Promise<OrgAccount[]> {
    const db = readConnection(this.knex);
    return this.withLedger(db, await new AccountRepository(db).listForOrganization(organizationId, MAX_ACCOUNTS_PER_ORGANIZATION));
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
    const checkpoints = new StatementCheckpoints();
    const db = readConnection(this.knex);
    const page = await withTransaction(
      db,
      async (trx) => {
        const account = await this.getAccountForOrganization(organizationId, accountId, trx);
        return new StatementReader(trx, account, checkpoints).page(interval, cursor?.entryId, limit);
      },
      READ_SNAPSHOT,
    );
    await this.storeCheckpoints(checkpoints, db);
    const last = page.lines[page.lines.length - 1];
    const nextCursor = page.hasMore && last ? encodeStatementCursor(this.cursorSecret, { entryId: last.entryId, ...interval, requestedTo }) : null;
    return { ...page, nextCursor };
  }

  /**
   * Streams the whole statement of the interval to `sink` in keyset batches of
   * STATEMENT_BATCH_SIZE rows; memory holds one batch at a time. Errors before `sink.start`
   * (404, 400) reach the caller untouched, before anything is sent. A database connection is
   * held only while a batch is read, never while the sink waits for a slow client, so stalled
   * downloads cannot exhaust the pool. No snapshot is needed for the lines to add up: the
   * interval ends before the settle margin and ledger entries are immutable, so every batch
   * (and the opening balance) reads a part of history that no longer changes.
   */
  async streamStatement(organizationId: string, accountId: string, range: StatementRange, sink: StatementSink, batchSize = STATEMENT_BATCH_SIZE): Promise<void> {
    const { from, to } = resolveInterval(range, this.settledUntil());
    const db = readConnection(this.knex);
    const account = await this.getAccountForOrganization(organizationId, accountId, db);
    const checkpoints = new StatementCheckpoints();
    await new StatementReader(db, account, checkpoints).stream({ from, to }, sink, batchSize);
    await this.storeCheckpoints(checkpoints, db);
  }

  /**
   * Stores the day checkpoints a read computed (after its read-only snapshot). They are a
   * cache of immutable history: failing to store one costs the next read the same work again,
   * never a wrong answer, so a failure here never fails the read. Only what was read from the
   * primary is stored: a standby's read may lag, and the cache is kept for good.
   */
  private async storeCheckpoints(checkpoints: StatementCheckpoints, readFrom: Db): Promise<void> {
    if (checkpoints.size === 0 || readFrom !== this.knex) return;
    await checkpoints.save(this.knex).catch(() => undefined);
  }
}
