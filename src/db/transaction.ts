import { AsyncLocalStorage } from 'node:async_hooks';
import type { Knex } from 'knex';

/** SQLSTATEs worth retrying: the whole transaction is replayed from the start. */
const RETRYABLE = new Set(['40001', '40P01']); // serialization_failure, deadlock_detected

export interface TransactionOptions {
  /** Extra attempts after the first one (default 3). */
  retries?: number;
  /**
   * Also retry, on a new connection and with a longer backoff (100 ms, doubling), when the
   * connection is lost mid-transaction (a terminated backend, a failover, a reset socket).
   * Only for work that re-checks under its locks what it changes: the COMMIT may have gone
   * through before the connection dropped.
   */
  retryOnConnectionLoss?: boolean;
  isolationLevel?: Knex.IsolationLevels;
  readOnly?: boolean;
}

export function isRetryableDatabaseError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (typeof code === 'string' && RETRYABLE.has(code)) || isStalePreparedStatement(error);
}

/**
 * PostgreSQL's answer when a prepared statement's result columns changed under it: a migration
 * added a column to a table that a `SELECT *` or `RETURNING *` reads, while this instance kept
 * its connections (a rolling deploy). Nothing ran; the statement must be prepared again.
 */
export function isStalePreparedStatement(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  return e?.code === '0A000' && typeof e.message === 'string' && /cached plan must not change result type/.test(e.message);
}

/** Errors of the socket under a connection (no SQLSTATE). */
const CONNECTION_LOST_ERRNOS = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT']);

/**
 * True when `error` ended the connection, or showed that its server is no longer the primary,
 * rather than failing the statement: class 08 (connection exception, including 08007 when a
 * COMMIT's outcome is unknown), 57P (operator intervention: a terminated backend, a shutdown,
 * a server starting up), a socket error, 25006 (a write refused by a read-only server: a
 * standby, or a demoted primary) or a standby's recovery conflict. Each is what a failover
 * looks like to a client: the pool drops its connections and finds the primary again
 * (database.ts), the request answers 503 with Retry-After, and the work may be tried again on a
 * new connection; its transaction did not commit unless only its answer was lost (callers that
 * retry re-check under their locks, or carry an attempt id or Idempotency-Key).
 * Errors of a statement that ran (constraints, serialization) are not connection losses.
 */
export function isConnectionLoss(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  const code = e?.code;
  const message = typeof e?.message === 'string' ? e.message : '';
  if (typeof code === 'string' && (code.startsWith('08') || code.startsWith('57P') || code === READ_ONLY_SQL_TRANSACTION || CONNECTION_LOST_ERRNOS.has(code))) return true;
  if (code === '40001' && /conflict with recovery/i.test(message)) return true;
  return /Connection terminated|connection error and is not queryable|Client was closed and is not queryable/i.test(message);
}

/** SQLSTATE 25006: a write sent to a server that accepts none (a standby, a demoted primary). */
const READ_ONLY_SQL_TRANSACTION = '25006';

/**
 * SQLSTATE 08007 (transaction_resolution_unknown): the COMMIT was released by PostgreSQL with
 * the WARNING "canceling wait for synchronous replication" (the transaction committed locally,
 * and may not be on the standby that a failover promotes). Neither success nor failure can be
 * told: the request answers 503 and its Idempotency-Key settles the outcome on retry.
 */
export class CommitOutcomeUnknownError extends Error {
  override name = 'CommitOutcomeUnknownError';
  readonly code = '08007';
  constructor(readonly warning: string) {
    super(`the COMMIT's outcome is unknown: ${warning}`);
  }
}

/** PostgreSQL's WARNING when a COMMIT stops waiting for its synchronous standby (cancelled, or the backend terminated). */
export function isSynchronousReplicationCancel(message: string): boolean {
  return /canceling (the )?wait for synchronous replication/i.test(message);
}

/** The first pause before retrying on a new connection (then doubling). */
const CONNECTION_RETRY_BASE_MS = 100;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type BeforeCommitHook = (trx: Knex.Transaction) => Promise<void>;

/** The hooks of each transaction opened by withTransaction, run after its work and before COMMIT. */
const beforeCommitHooks = new WeakMap<Knex.Transaction, BeforeCommitHook[]>();

/**
 * Runs `hook` inside `trx` once its work is done, just before COMMIT (a failing hook rolls the
 * transaction back). Returns false, and registers nothing, when `trx` was not opened by
 * withTransaction: the caller must then do the work at once.
 */
export function onBeforeCommit(trx: Knex.Transaction, hook: BeforeCommitHook): boolean {
  const hooks = beforeCommitHooks.get(trx);
  if (!hooks) return false;
  hooks.push(hook);
  return true;
}

/** A check a transaction must pass just before its COMMIT (see withTransactionGuard). */
export type TransactionGuard = (trx: Knex.Transaction) => Promise<void>;

const transactionGuards = new AsyncLocalStorage<TransactionGuard>();

/**
 * Runs `fn` with `guard`: every read-write transaction withTransaction opens from within it
 * (however deep: a service's own transaction, the pipeline's) runs `guard` inside itself as its
 * last statement before COMMIT; a guard that throws rolls the transaction back. The pipeline
 * guards a write made with an API key by the key's row (read FOR SHARE), so nothing commits
 * once the key's revocation has committed.
 */
export function withTransactionGuard<T>(guard: TransactionGuard, fn: () => T): T {
  return transactionGuards.run(guard, fn);
}

/** Runs `fn` in `trx`, then the hooks it registered (onBeforeCommit), in order, until none is left, then the guard. */
async function managed<T>(trx: Knex.Transaction, fn: (trx: Knex.Transaction) => Promise<T>, guard: TransactionGuard | undefined): Promise<T> {
  const hooks: BeforeCommitHook[] = [];
  beforeCommitHooks.set(trx, hooks);
  const result = await fn(trx);
  // Hooks may register more hooks (and run queries): run them in order until none is left.
  for (let hook = hooks.shift(); hook; hook = hooks.shift()) await hook(trx);
  if (guard) await guard(trx);
  return result;
}

/**
 * The scope of `trx`'s before-commit hooks (undefined outside withTransaction): one per
 * transaction, so what is queued for a hook is kept with the transaction and dropped with it.
 */
export function beforeCommitScope(trx: Knex.Transaction): object | undefined {
  return beforeCommitHooks.get(trx);
}

/**
 * Runs `fn` in one database transaction and retries it, a bounded number of times with a
 * small jittered back-off, when PostgreSQL aborts it for a serialization failure or a
 * deadlock. `fn` must therefore have no effect outside the transaction (no HTTP calls, no
 * in-memory mutations that a retry would repeat). Called with a transaction, it joins it
 * and does not retry: the outermost caller owns the retry.
 */
export async function withTransaction<T>(
  db: Knex | Knex.Transaction,
  fn: (trx: Knex.Transaction) => Promise<T>,
  options: TransactionOptions = {},
): Promise<T> {
  if ((db as Knex.Transaction).isTransaction) return fn(db as Knex.Transaction);
  const retries = options.retries ?? 3;
  const config: Knex.TransactionConfig = {};
  if (options.isolationLevel) config.isolationLevel = options.isolationLevel;
  if (options.readOnly) config.readOnly = true;
  const guard = options.readOnly ? undefined : transactionGuards.getStore();
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await (db as Knex).transaction((trx) => managed(trx, fn, guard), config);
    } catch (error) {
      const lost = options.retryOnConnectionLoss === true && isConnectionLoss(error);
      if (attempt >= retries || !(lost || isRetryableDatabaseError(error))) throw error;
      await sleep(lost ? CONNECTION_RETRY_BASE_MS * 2 ** attempt + Math.floor(Math.random() * 50) : Math.floor(Math.random() * 10 * 2 ** attempt) + 1);
    }
  }
}

/** True when `error` is a PostgreSQL unique violation, optionally of one named constraint. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as { code?: unknown; constraint?: unknown } | null;
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}

/**
 * Sets PostgreSQL settings for the rest of the transaction only (set_config(..., true), as SET
 * LOCAL): timeouts that bound one use case, such as `lock_timeout` or
 * `idle_in_transaction_session_timeout` (milliseconds when given a number).
 */
export async function setLocal(trx: Knex.Transaction, settings: Record<string, string | number>): Promise<void> {
  const entries = Object.entries(settings);
  // A COMMIT is never cancelled by a statement timeout: cancelled while it waits for a
  // synchronous standby, PostgreSQL keeps it committed locally and only warns (an outcome
  // neither side can tell). The timeout bounds the work, then is lifted for the COMMIT.
  if ('statement_timeout' in settings) onBeforeCommit(trx, (t) => t.raw('SET LOCAL statement_timeout = 0').then(() => undefined));
  await trx.raw(`SELECT ${entries.map(() => 'set_config(?, ?, true)').join(', ')}`, entries.flatMap(([name, value]) => [name, typeof value === 'number' ? `${Math.trunc(value)}ms` : value]));
}
