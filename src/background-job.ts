import type { Logger } from 'pino';

export interface BackgroundJob {
  /** Runs the job now, or joins the run in progress (runs never overlap). */
  runNow(): Promise<void>;
  /** Clears the timer and resolves once the run in progress, if any, has finished. */
  stop(): Promise<void>;
}

/**
 * Work done every `everyMs` besides requests (sweeps, purges). A failed run is logged and the
 * next tick tries again; `stop()` waits for the run in progress, so a shutdown never closes
 * the database pool under it.
 */
export function startBackgroundJob(
  name: string,
  everyMs: number,
  logger: Pick<Logger, 'error'>,
  work: () => Promise<void>,
  /** Told the outcome of every run (metrics). */
  onRun?: (job: string, outcome: 'success' | 'failure') => void,
): BackgroundJob {
  let running: Promise<void> | undefined;
  let stopped = false;
  const runNow = (): Promise<void> => {
    if (stopped) return running ?? Promise.resolve();
    running ??= work()
      .then(() => onRun?.(name, 'success'))
      .catch((err: unknown) => {
        onRun?.(name, 'failure');
        logger.error({ err, job: name }, `background job "${name}" failed; the next run tries again`);
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const timer = setInterval(() => void runNow(), everyMs);
  timer.unref();
  return {
    runNow,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
