import type { Knex } from 'knex';

/** A promise opened from outside: `opened` resolves once `open()` is called (a transaction held until then). */
export function gate<T = void>(): { opened: Promise<T>; open(value: T): void } {
  let open!: (value: T) => void;
  const opened = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/**
 * Resolves once a statement of this database whose text matches `queryPattern` (ILIKE) is
 * waiting for a lock (pg_stat_activity), so a test can let the holder go knowing the other
 * side really waited. Real PostgreSQL only; gives up after about 5 s.
 */
export async function untilWaitingForLock(knex: Knex, queryPattern: string): Promise<void> {
  for (let tries = 0; tries < 200; tries += 1) {
    const { rows } = (await knex.raw(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE ?`,
      [queryPattern],
    )) as { rows: Array<{ n: number }> };
    if ((rows[0]?.n ?? 0) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no statement like ${queryPattern} waited for a lock within 5 s`);
}
