import { untilEmpty, type PeriodicTask, type TaskLogger } from '../../jobs/periodic-task';
import type { IdempotencyService } from './idempotency-service';

/** Expired idempotency keys are free for reuse already; deleting them keeps the table small. */
export function idempotencyJobs(idempotency: Pick<IdempotencyService, 'purgeExpired'>, logger: TaskLogger): PeriodicTask[] {
  return [
    {
      queue: 'idempotency.purge-expired',
      everySeconds: 15 * 60,
      async run() {
        const purged = await untilEmpty(() => idempotency.purgeExpired());
        if (purged) logger.info({ purged }, 'expired idempotency keys deleted');
      },
    },
  ];
}
