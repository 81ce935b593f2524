import { untilEmpty, type PeriodicTask, type TaskLogger } from '../../jobs/periodic-task';
import type { EventsService } from './events-service';
import type { WebhookService } from './webhook-service';

/**
 * The background work of events and webhooks, on the job queue (src/jobs):
 * - `webhooks.dispatch-due`: every WEBHOOK_DISPATCH_INTERVAL_SECONDS (and at start, which
 *   delivers what a crash between commit and delivery left), claims due deliveries, each with
 *   SKIP LOCKED and a lease, so overlapping runs on several instances never send one attempt
 *   twice, and starts their attempts side by side without waiting for them (bounded per
 *   instance, endpoint and organisation: `WebhookService.dispatchDue`); a worker that dies
 *   mid-attempt leaves its deliveries to the next run once their lease ends.
 * - `events.purge-expired`: hourly, the events older than EVENT_RETENTION_DAYS.
 */
export function eventsJobs(webhooks: Pick<WebhookService, 'dispatchDue'>, events: Pick<EventsService, 'purgeExpired'>, options: { dispatchEverySeconds: number }, logger: TaskLogger): PeriodicTask[] {
  return [
    {
      queue: 'webhooks.dispatch-due',
      everySeconds: options.dispatchEverySeconds,
      runAtStart: true,
      async run() {
        const started = await untilEmpty(() => webhooks.dispatchDue());
        if (started) logger.info({ started }, 'webhook delivery attempts started');
      },
    },
    {
      queue: 'events.purge-expired',
      everySeconds: 3_600,
      async run() {
        const purged = await events.purgeExpired();
        if (purged) logger.info({ purged }, 'events past their retention deleted');
      },
    },
  ];
}
