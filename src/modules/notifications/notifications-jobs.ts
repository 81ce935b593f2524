import type { PeriodicTask, TaskLogger } from '../../jobs/periodic-task';
import type { OutboxService } from './outbox-service';

/** Outbox messages older than OUTBOX_RETENTION_HOURS. */
export function notificationsJobs(outbox: Pick<OutboxService, 'purgeExpired'>, logger: TaskLogger): PeriodicTask[] {
  return [
    {
      queue: 'notifications.purge-outbox',
      everySeconds: 60 * 60,
      async run() {
        const purged = await outbox.purgeExpired();
        if (purged) logger.info({ purged }, 'old outbox messages deleted');
      },
    },
  ];
}
