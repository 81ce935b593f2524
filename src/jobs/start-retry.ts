import { isConnectionLoss, isRetryableDatabaseError } from '../db/transaction';

/**
 * SQLSTATEs of instances starting their job queues together on one database: pg-boss creating
 * the same schema objects, queues (partitions) or schedules at once (duplicate_object,
 * duplicate_table, unique_violation), besides deadlocks and serialization failures.
 */
const RACE_CODES = new Set(['42710', '42P07', '23505']);

/**
 * True for a failure of starting the job queue that a second try can get past: a race with
 * another instance starting (a deadlock in pg-boss's `create_queue`, an object created twice)
 * or a connection lost meanwhile (a terminated backend, a failover). A bad configuration is
 * not one of them.
 */
export function isTransientStartError(error: unknown): boolean {
  if (isRetryableDatabaseError(error) || isConnectionLoss(error)) return true;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && RACE_CODES.has(code)) return true;
  // pg-boss rethrows some of these with the database's message only.
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && /deadlock detected|already exists|terminating connection/i.test(message);
}

export interface StartRetryOptions {
  /** Tries in all (at least 1). */
  attempts: number;
  /** The pause before the second try; each later one waits that much longer (each with up to 50 % jitter, so racing instances part). */
  delayMs: number;
  /** Called before each new try, with the failure of the one before. */
  onRetry?: (error: unknown, attempt: number) => void;
}

/**
 * Runs `start` until it succeeds, trying again after a transient failure (see
 * `isTransientStartError`) at most `attempts` times in all; `undo` runs after each failed try
 * (to stop what it had started). A permanent failure, or the last one, is thrown.
 */
export async function withStartRetries<T>(start: () => Promise<T>, undo: () => Promise<void>, options: StartRetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await start();
    } catch (error) {
      await undo().catch(() => undefined);
      if (attempt >= options.attempts || !isTransientStartError(error)) throw error;
      options.onRetry?.(error, attempt + 1);
      await new Promise((resolve) => setTimeout(resolve, options.delayMs * attempt * (1 + Math.random() / 2)));
    }
  }
}
