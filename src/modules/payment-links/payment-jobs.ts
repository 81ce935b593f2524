import type { PeriodicTask, TaskLogger } from '../../jobs/periodic-task';
import type { PaymentsService } from './payments-service';

/**
 * Payments on the payment page whose sandbox decision is due are settled at start (a restart
 * lost their timers) and then every 10 seconds, a bounded batch at a time; reads (the status
 * API, the result page) never settle anything. Each payment is claimed with SKIP LOCKED: runs
 * that overlap settle different ones.
 */
export function paymentJobs(payments: Pick<PaymentsService, 'sweepDue'>, logger: TaskLogger): PeriodicTask[] {
  return [
    {
      queue: 'payments.settle-due',
      everySeconds: 10,
      runAtStart: true,
      async run() {
        const settled = await payments.sweepDue({ batchSize: 100 });
        if (settled) logger.info({ settled }, 'due sandbox payments settled');
      },
    },
  ];
}
