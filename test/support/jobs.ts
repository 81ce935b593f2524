import crypto from 'node:crypto';
import pino from 'pino';
import type { JobsConfig } from '../../src/config';
import { Jobs, type JobsDeps, type JobsObserver } from '../../src/jobs/jobs';
import { testKnex } from './database';

/** Fast settings: workers poll twice a second, maintenance (expired jobs) every second. */
export const TEST_JOBS_CONFIG: JobsConfig = { pollingIntervalMs: 500, maintenanceIntervalSeconds: 1, expireInSeconds: 60, retryLimit: 3, retryDelaySeconds: 0 };

const started = new Set<Jobs>();

/** A Jobs instance over the run's database (as another application instance would be), stopped after the test. */
export async function startTestJobs(options: { config?: Partial<JobsConfig>; observer?: JobsObserver; logger?: JobsDeps['logger'] } = {}): Promise<Jobs> {
  const logger = options.logger ?? pino({ level: 'silent' });
  const jobs = await Jobs.start({ knex: testKnex(), config: { ...TEST_JOBS_CONFIG, ...options.config }, logger, observer: options.observer });
  started.add(jobs);
  return jobs;
}

/**
 * Stops every instance started since the last call; test/support/stop-jobs.ts runs it after each
 * test of every file.
 */
export async function stopTestJobs(): Promise<void> {
  await Promise.all([...started].map((jobs) => jobs.stop({ graceful: false })));
  started.clear();
}

/** A queue name of its own per test (queues live in the run's database). */
export function testQueue(name: string): string {
  return `test.${name}.${crypto.randomBytes(4).toString('hex')}`;
}

/** Resolves once `check` returns true, polling; rejects after `timeoutMs` (a safety net, not a measure). */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
