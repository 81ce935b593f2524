import type { PeriodicTask, TaskLogger } from '../../jobs/periodic-task';
import type { TopUpService } from './top-up-service';

/**
 * Top-ups pending for more than ten minutes (a callback lost, or never sent) are asked about
 * at the rail every minute, a bounded batch per run, and settled with its answer; callback ids
 * older than a day are forgotten.
 */
export function topUpJobs(topUps: Pick<TopUpService, 'checkPending'>, logger: TaskLogger): PeriodicTask[] {
  return [
    {
      queue: 'top-ups.check-pending',
      everySeconds: 60,
      runAtStart: false,
      async run() {
        const settled = await topUps.checkPending({ batchSize: 100 });
        if (settled) logger.info({ settled }, 'pending top-ups settled from the rail');
      },
    },
  ];
}
