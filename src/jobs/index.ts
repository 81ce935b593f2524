import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Metrics } from '../http/metrics';
import { authJobs } from '../modules/auth';
import { escrowJobs } from '../modules/escrows';
import { idempotencyJobs } from '../modules/idempotency';
import { paymentJobs } from '../modules/payment-links';
import { tontineJobs } from '../modules/tontines';
import { transferJobs } from '../modules/transfers';
import type { Services } from '../services';
import { Jobs } from './jobs';
import type { PeriodicTask } from './periodic-task';

export { Jobs, knexExecutor, type JobContext, type JobHandler, type QueueOptions, type SendOptions } from './jobs';
export type { PeriodicTask } from './periodic-task';

/** Every module's periodic tasks: one list to see all the background work. */
export function periodicTasks(services: Services, config: Config, logger: Logger): PeriodicTask[] {
  return [
    ...transferJobs(services.transfers, logger),
    ...paymentJobs(services.payments, logger),
    ...idempotencyJobs(services.idempotency, logger),
    ...authJobs(services.auth, logger),
    ...escrowJobs(services.escrows, config.escrows, logger),
    ...tontineJobs(services.tontines, logger),
  ];
}

/**
 * Starts the job queue on the application's pool, registers every module's tasks (the ones
 * that ran at start run now) and reports runs and waiting jobs to the metrics.
 */
export async function startJobs(deps: { knex: Knex; config: Config; logger: Logger; metrics: Metrics; services: Services }): Promise<Jobs> {
  const { config, logger, metrics } = deps;
  const jobs = await Jobs.start({ knex: deps.knex, config: config.jobs, logger, observer: metrics });
  try {
    metrics.observeJobs(() => jobs.queued());
    for (const task of periodicTasks(deps.services, config, logger)) await jobs.every(task);
  } catch (error) {
    await jobs.stop({ graceful: false });
    throw error;
  }
  return jobs;
}
