import type { PeriodicTask, TaskLogger } from '../../jobs/periodic-task';
import type { HeldPayoutService } from './held-payout-service';

/**
 * Payouts held for verification are tried again, a bounded batch per minute, each when its
 * next attempt is due (a minute after the hold, then backing off to a day): those their
 * recipients' limits now allow complete.
 */
export function heldPayoutJobs(heldPayouts: Pick<HeldPayoutService, 'completeDue'>, logger: TaskLogger): PeriodicTask[] {
  return [
    {
      queue: 'held-payouts.complete-due',
      everySeconds: 60,
      runAtStart: false,
      async run() {
        const completed = await heldPayouts.completeDue({ batchSize: 100 });
        if (completed) logger.info({ completed }, 'held payouts completed');
      },
    },
  ];
}
