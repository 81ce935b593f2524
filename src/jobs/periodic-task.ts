/**
 * Work done once per period across all instances (sweeps, purges), declared next to its
 * module (e.g. src/modules/escrows/escrow-jobs.ts) and registered by src/jobs/index.ts.
 */
export interface PeriodicTask {
  /** The pg-boss queue of its runs, e.g. `escrows.release-due`. */
  queue: string;
  /** The period: at most one run per slot of this many seconds (at least 1), cluster-wide. */
  everySeconds: number;
  /** Also run once as soon as an instance starts (what a restart may have left undone). */
  runAtStart?: boolean;
  /** A run still going after this long is failed (its worker died) and retried. */
  expireInSeconds?: number;
  /** One run; it throws to be retried. Runs of two instances may overlap (a start run and a tick): each sweep claims its rows with SKIP LOCKED. */
  run(): Promise<void>;
}

/** Runs a batch step until a batch finds nothing (purges), and says how many rows it took in all. */
export async function untilEmpty(step: () => Promise<number>): Promise<number> {
  let total = 0;
  for (let batch = await step(); batch > 0; batch = await step()) total += batch;
  return total;
}

/** The log lines of the tasks: one line per run that did something. */
export type TaskLogger = { info(fields: object, message: string): void };
