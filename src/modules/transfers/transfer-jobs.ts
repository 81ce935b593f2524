import type { PeriodicTask, TaskLogger } from '../../jobs/periodic-task';
import type { TransferService } from './transfers-service';

/**
 * Pending bank and mobile-money transfers are handed to their rail again at start and then
 * every minute: a restart or a failed settlement never leaves money parked in transit. Each
 * is claimed with SKIP LOCKED and a hand-over lease, so the rail is called once per transfer
 * (and again only when its outcome has not come within the lease).
 */
export function transferJobs(transfers: Pick<TransferService, 'resumePending'>, logger: TaskLogger): PeriodicTask[] {
  return [
    {
      queue: 'transfers.resume-pending',
      everySeconds: 60,
      runAtStart: true,
      async run() {
        const resumed = await transfers.resumePending();
        if (resumed) logger.info({ resumed }, 'pending transfers handed to their rail again');
      },
    },
  ];
}
