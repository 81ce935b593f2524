import type { PeriodicTask, TaskLogger } from '../../jobs/periodic-task';
import type { SignupService } from './signup-service';

/** Sign-up verifications and password resets are kept a day (long past their 10 minutes), then deleted. */
export function onboardingJobs(signup: Pick<SignupService, 'purgeCodes'>, logger: TaskLogger): PeriodicTask[] {
  return [
    {
      queue: 'onboarding.purge-codes',
      everySeconds: 60 * 60,
      async run() {
        const purged = await signup.purgeCodes();
        if (purged) logger.info({ purged }, 'old sign-up verifications and password resets deleted');
      },
    },
  ];
}
