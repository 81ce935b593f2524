import { untilEmpty, type PeriodicTask, type TaskLogger } from '../../jobs/periodic-task';
import type { TontineService } from './tontine-service';

/**
 * Tontine contributions still unpaid when their cycle falls due become `late` (every minute;
 * each run locks its tontines with SKIP LOCKED).
 */
export function tontineJobs(tontines: Pick<TontineService, 'markLateContributions'>, logger: TaskLogger): PeriodicTask[] {
  return [
    {
      queue: 'tontines.mark-late-contributions',
      everySeconds: 60,
      runAtStart: true,
      async run() {
        const marked = await untilEmpty(() => tontines.markLateContributions());
        if (marked) logger.info({ marked }, 'late tontine contributions marked');
      },
    },
  ];
}
