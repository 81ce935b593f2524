import type { PeriodicTask, TaskLogger } from '../../jobs/periodic-task';
import type { RailInstructionService } from './rail-instruction-service';

/**
 * What the rails must still be told (an instruction whose request died after its commit, or
 * whose rail failed) is delivered every fifteen seconds, a bounded batch per run, each when its
 * attempt is due; also at start, for what a stopped instance left undone.
 */
export function railInstructionJobs(instructions: Pick<RailInstructionService, 'deliverDue'>, logger: TaskLogger): PeriodicTask[] {
  return [
    {
      queue: 'rail-instructions.deliver-due',
      everySeconds: 15,
      runAtStart: true,
      async run() {
        const delivered = await instructions.deliverDue({ batchSize: 100 });
        if (delivered) logger.info({ delivered }, 'rail instructions delivered');
      },
    },
  ];
}
