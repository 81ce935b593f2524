import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Metrics } from '../http/metrics';
import { authJobs } from '../modules/auth';
import { cryptoJobs } from '../modules/crypto';
import { escrowJobs } from '../modules/escrows';
import { eventsJobs } from '../modules/events';
import { heldPayoutJobs } from '../modules/held-payouts';
import { idempotencyJobs } from '../modules/idempotency';
import { notificationsJobs } from '../modules/notifications';
import { identityJobs } from '../modules/identity';
import { onboardingJobs } from '../modules/onboarding';
import { paymentJobs } from '../modules/payment-links';
import { railInstructionJobs } from '../modules/rail-instructions';
import { tontineJobs } from '../modules/tontines';
import { topUpJobs } from '../modules/top-ups';
import { transferJobs } from '../modules/transfers';
import type { Services } from '../services';
import { Jobs } from './jobs';
import type { PeriodicTask } from './periodic-task';
import { withStartRetries } from './start-retry';

export { Jobs, knexExecutor, type JobContext, type JobHandler, type QueueOptions, type SendOptions } from './jobs';
export type { PeriodicTask } from './periodic-task';
export { isTransientStartError, withStartRetries } from './start-retry';

/** Every module's periodic tasks: one list to see all the background work. */
export function periodicTasks(services: Services, config: Config, logger: Logger): PeriodicTask[] {
  return [
    ...transferJobs(services.transfers, logger),
    ...paymentJobs(services.payments, logger),
    ...idempotencyJobs(services.idempotency, logger),
    ...authJobs(services.auth, logger),
    ...escrowJobs(services.escrows, config.escrows, logger),
    ...tontineJobs(services.tontines, logger),
    ...eventsJobs(services.webhooks, services.events, config.webhooks, logger),
    ...notificationsJobs(services.outbox, logger),
    ...identityJobs(services.identity, config.identity, logger),
    ...onboardingJobs(services.signup, logger),
    ...topUpJobs(services.topUps, logger),
    ...heldPayoutJobs(services.heldPayouts, logger),
    ...railInstructionJobs(services.railInstructions, logger),
    ...cryptoJobs(services.cryptoDeposits, services.cryptoWithdrawals, config.crypto),
  ];
}

/**
 * Starts the job queue on the application's pool and reports runs and waiting jobs to the
 * metrics. Started before the app is built, so services can be handed `jobs` to enqueue
 * from a transaction; nothing runs until workers are registered.
 */
export async function startJobs(deps: { knex: Knex; config: Config; logger: Logger; metrics: Metrics }): Promise<Jobs> {
  const jobs = await Jobs.start({ knex: deps.knex, config: deps.config.jobs, logger: deps.logger, observer: deps.metrics });
  deps.metrics.observeJobs(() => jobs.queued());
  return jobs;
}

/** Registers every module's periodic tasks (the ones that run at start are queued now). */
export async function runPeriodicTasks(jobs: Jobs, services: Services, config: Config, logger: Logger): Promise<void> {
  for (const task of periodicTasks(services, config, logger)) await jobs.every(task);
}

/**
 * An instance's background work, as `main` starts it: the job queue on the application's pool
 * and every module's periodic tasks, then the metrics of the queue. Instances starting together
 * on one database race in pg-boss (a deadlock creating the same queue, an object created
 * twice) and a connection may be lost meanwhile: such a failure stops what this try started
 * and tries again (at most `attempts` tries, default 8), instead of ending the process.
 */
export async function startBackgroundJobs(
  deps: { knex: Knex; config: Config; logger: Logger; metrics: Metrics; services: Services },
  retry: { attempts?: number; delayMs?: number } = {},
): Promise<Jobs> {
  let jobs: Jobs | undefined;
  const started = await withStartRetries(
    async () => {
      jobs = await Jobs.start({ knex: deps.knex, config: deps.config.jobs, logger: deps.logger, observer: deps.metrics });
      await runPeriodicTasks(jobs, deps.services, deps.config, deps.logger);
      return jobs;
    },
    async () => {
      await jobs?.stop({ graceful: false });
      jobs = undefined;
    },
    { attempts: retry.attempts ?? 8, delayMs: retry.delayMs ?? 1_000, onRetry: (err, attempt) => deps.logger.warn({ err, attempt }, 'starting the job queue failed (a race with another instance or a lost connection): trying again') },
  );
  deps.metrics.observeJobs(() => started.queued());
  return started;
}
