import type { Knex } from 'knex';

/** SQLSTATEs worth retrying: the whole transaction is replayed from the start. */
const RETRYABLE = new Set(['40001', '40P01']); // serialization_failure, deadlock_detected

export interface TransactionOptions {
  /** Extra attempts after the first one (default 3). */
  retries?: number;
  isolationLevel?: Knex.IsolationLevels;
  readOnly?: boolean;
}

export function isRetryableDatabaseError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && RETRYABLE.has(code);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await (db as Knex).transaction(fn, config);
    } catch (error) {
      if (attempt >= retries || !isRetryableDatabaseError(error)) throw error;
      await sleep(Math.floor(Math.random() * 10 * 2 ** attempt) + 1);
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
  await trx.raw(`SELECT ${entries.map(() => 'set_config(?, ?, true)').join(', ')}`, entries.flatMap(([name, value]) => [name, typeof value === 'number' ? `${Math.trunc(value)}ms` : value]));
}
