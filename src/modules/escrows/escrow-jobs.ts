import type { PeriodicTask, TaskLogger } from '../../jobs/periodic-task';
import type { EscrowService } from './escrow-service';

/**
 * Delivered escrows whose inspection period ended without a dispute are released to the
 * seller, a bounded batch per run (ESCROW_RELEASE_INTERVAL_MS, in whole seconds, at least 1);
 * runs that overlap skip each other's rows.
 */
export function escrowJobs(escrows: Pick<EscrowService, 'releaseDue'>, options: { releaseIntervalMs: number; releaseBatchSize: number }, logger: TaskLogger): PeriodicTask[] {
  return [
    {
      queue: 'escrows.release-due',
      everySeconds: options.releaseIntervalMs / 1000,
      runAtStart: true,
      async run() {
        const released = await escrows.releaseDue({ batchSize: options.releaseBatchSize });
        if (released) logger.info({ released }, 'escrows released after their inspection period');
      },
    },
  ];
}
