import type { IdentityConfig } from '../../config';
import type { PeriodicTask, TaskLogger } from '../../jobs/periodic-task';
import type { IdentityService } from './identity-service';

/**
 * Submitted sessions go to the identity provider from the job queue, never from the request:
 * `identity.process-submitted` claims them (a lease, SKIP LOCKED: the session row is the work
 * item, written in the submit's transaction), asks the provider outside any transaction and
 * records each answer. `identity.expire-sessions` cancels sessions left waiting for input past
 * their 24 hours.
 */
export function identityJobs(identity: Pick<IdentityService, 'processDue' | 'expireDue'>, config: Pick<IdentityConfig, 'processEverySeconds' | 'expireEverySeconds'>, logger: TaskLogger): PeriodicTask[] {
  return [
    {
      queue: 'identity.process-submitted',
      everySeconds: config.processEverySeconds,
      runAtStart: true,
      async run() {
        const settled = await identity.processDue();
        if (settled) logger.info({ settled }, 'identity verification sessions settled by the provider');
      },
    },
    {
      queue: 'identity.expire-sessions',
      everySeconds: config.expireEverySeconds,
      runAtStart: true,
      async run() {
        const expired = await identity.expireDue();
        if (expired) logger.info({ expired }, 'unfinished identity verification sessions expired');
      },
    },
  ];
}
