import type { PeriodicTask, TaskLogger } from '../../jobs/periodic-task';
import type { AuthService } from './auth-service';

/** Failed-login counters nobody touched for longer than a known source is remembered. */
export function authJobs(auth: Pick<AuthService, 'purgeLoginAttempts'>, logger: TaskLogger): PeriodicTask[] {
  return [
    {
      queue: 'auth.purge-login-attempts',
      everySeconds: 60 * 60,
      async run() {
        const purged = await auth.purgeLoginAttempts();
        if (purged) logger.info({ purged }, 'old login attempts deleted');
      },
    },
  ];
}
