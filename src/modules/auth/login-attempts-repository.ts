import type { Knex } from 'knex';

/** What one reservation of an attempt found: the count including this attempt, and any lock. */
export interface Reservation {
  failures: number;
  lockedUntil: Date | null;
  windowStartedAt: Date;
  lastSuccessAt: Date | null;
}

interface ReservationRow {
  failures: number;
  locked_until: Date | null;
  window_started_at: Date;
  last_success_at: Date | null;
}

/** The row of the account as a whole (every source). */
export const EVERY_SOURCE = '*';

/**
 * The failed-login counters (table login_attempts). Every write is one statement, so the count
 * holds across connections and instances.
 */
export class LoginAttemptsRepository {
  constructor(private readonly db: Knex) {}

  /**
   * Counts this attempt before its password is verified, in one upsert: a running lock stays
   * (and the count with it); an ended lock or a window older than `windowMinutes` starts a new
   * count at 1; otherwise the count grows by one. Concurrent attempts each get their own number.
   */
  async reserve(subject: string, source: string, windowMinutes: number): Promise<Reservation> {
    const fresh = `(a.locked_until IS NOT NULL AND a.locked_until <= now()) OR (a.locked_until IS NULL AND a.window_started_at <= now() - make_interval(mins => ?))`;
    const result = await this.db.raw<{ rows: ReservationRow[] }>(
      `INSERT INTO login_attempts AS a (subject, source, failures, window_started_at, updated_at)
       VALUES (?, ?, 1, now(), now())
       ON CONFLICT (subject, source) DO UPDATE SET
         failures = CASE WHEN a.locked_until > now() THEN a.failures
                         WHEN ${fresh} THEN 1
                         ELSE LEAST(a.failures + 1, 1000000) END,
         window_started_at = CASE WHEN a.locked_until > now() THEN a.window_started_at
                                  WHEN ${fresh} THEN now()
                                  ELSE a.window_started_at END,
         locked_until = CASE WHEN a.locked_until > now() THEN a.locked_until ELSE NULL END,
         updated_at = now()
       RETURNING failures, locked_until, window_started_at, last_success_at`,
      [subject, source, windowMinutes, windowMinutes],
    );
    const row = result.rows[0] as ReservationRow;
    return { failures: row.failures, lockedUntil: row.locked_until, windowStartedAt: row.window_started_at, lastSuccessAt: row.last_success_at };
  }

  /** Locks `subject` for `source` until now + `lockMinutes`; returns the end of the lock. */
  async lock(subject: string, source: string, lockMinutes: number): Promise<Date> {
    const rows = (await this.db('login_attempts')
      .where({ subject, source })
      .update({ locked_until: this.db.raw('now() + make_interval(mins => ?)', [lockMinutes]), updated_at: this.db.fn.now() })
      .returning(['locked_until'])) as Array<{ locked_until: Date }>;
    return (rows[0] as { locked_until: Date }).locked_until;
  }

  /** A successful login from `source`: its count starts over and the source becomes known. */
  async recordSuccess(subject: string, source: string): Promise<void> {
    await this.db('login_attempts')
      .where({ subject, source })
      .update({ failures: 0, locked_until: null, window_started_at: this.db.fn.now(), last_success_at: this.db.fn.now(), updated_at: this.db.fn.now() });
  }

  /** Gives back one reserved attempt that turned out right (the account-wide count counts failures only). */
  async release(subject: string, source: string): Promise<void> {
    await this.db('login_attempts')
      .where({ subject, source })
      .update({ failures: this.db.raw('GREATEST(failures - 1, 0)'), updated_at: this.db.fn.now() });
  }

  /** Deletes rows untouched for `days` (and not locked any more); returns how many. */
  async purgeOlderThan(days: number): Promise<number> {
    return Number(
      await this.db('login_attempts')
        .where('updated_at', '<', this.db.raw('now() - make_interval(days => ?)', [days]))
        .andWhere((q) => q.whereNull('locked_until').orWhere('locked_until', '<', this.db.fn.now()))
        .delete(),
    );
  }
}
