import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/http/metrics';
import { databaseKind, testKnex } from '../support/database';
import { deferred, startTestJobs, testQueue, until } from '../support/jobs';

/** Instances of the application sharing the database: the embedded server serves one connection, so one there. */
const INSTANCES = databaseKind() === 'embedded' ? 1 : 3;

describe('Jobs (pg-boss over the application pool)', () => {
  it('runs a periodic task at most once per period across all instances', async () => {
    const queue = testQueue('periodic');
    const runs: number[] = [];
    const begun = Date.now();
    for (let i = 0; i < INSTANCES; i += 1) {
      const jobs = await startTestJobs();
      await jobs.every({ queue, everySeconds: 1, run: async () => void runs.push(Date.now()) });
    }
    await until(() => runs.length >= 5);
    // Five runs in five distinct one-second slots, the first no earlier than the slot the test
    // began in: more than three seconds. Instances each running their own timer would get
    // there in well under two.
    expect(runs[4]! - begun).toBeGreaterThan(3_000);
  });

  it('never overlaps two runs of a queue on one instance, even when a run outlasts its period', async () => {
    const queue = testQueue('overlap');
    let running = 0;
    let most = 0;
    let runs = 0;
    const jobs = await startTestJobs();
    await jobs.every({
      queue,
      everySeconds: 1,
      async run() {
        running += 1;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 1_200));
        running -= 1;
        runs += 1;
      },
    });
    await until(() => runs >= 3);
    expect(most).toBe(1);
  });

  it('runs a task marked runAtStart as soon as an instance starts, whatever its period', async () => {
    const queue = testQueue('at-start');
    let runs = 0;
    const jobs = await startTestJobs();
    await jobs.every({ queue, everySeconds: 3_600, runAtStart: true, run: async () => void (runs += 1) });
    await until(() => runs === 1);
    expect(await jobs.boss.getQueueSize(queue)).toBe(1); // the next hour's run, deferred
  });

  it('claims each job for one worker: every job runs exactly once across instances', async () => {
    const queue = testQueue('claims');
    const seen: number[] = [];
    for (let i = 0; i < INSTANCES; i += 1) {
      const jobs = await startTestJobs();
      await jobs.work<{ n: number }>(queue, async (job) => void seen.push(job.data.n));
    }
    const producer = await startTestJobs();
    for (let n = 0; n < 20; n += 1) await producer.send(queue, { n });
    await until(() => seen.length >= 20);
    expect([...seen].sort((a, b) => a - b)).toEqual([...Array(20).keys()]);
  });

  it('retries a job whose handler throws, until it succeeds', async () => {
    const queue = testQueue('throws');
    let attempts = 0;
    const logged: unknown[] = [];
    const logger = { error: (fields: object) => void logged.push(fields), warn: () => undefined, info: () => undefined };
    const jobs = await startTestJobs({ logger });
    await jobs.work(queue, async () => {
      attempts += 1;
      if (attempts === 1) throw new Error('rail away');
    });
    const id = (await jobs.send(queue, {}))!;
    await until(async () => (await jobs.boss.getJobById(queue, id))?.state === 'completed');
    expect(attempts).toBe(2);
    expect(logged).toEqual([expect.objectContaining({ queue, jobId: id, err: expect.objectContaining({ message: 'rail away' }) })]);
  });

  it('retries on another instance a job whose worker stopped without finishing it', async () => {
    const queue = testQueue('dies');
    const stuck = deferred();
    const started = deferred();
    const done: string[] = [];
    const first = await startTestJobs();
    await first.work(queue, async () => {
      started.resolve();
      await stuck.promise;
    });
    const id = (await first.send(queue, {}))!;
    await started.promise;
    await first.stop({ graceful: false });
    const second = await startTestJobs();
    await second.work(queue, async (job) => void done.push(job.id));
    await until(() => done.length === 1);
    expect(done).toEqual([id]);
    stuck.resolve();
  });

  it('retries a job still running after its expireInSeconds (a hung or dead worker)', async () => {
    const queue = testQueue('expires');
    const hung = deferred();
    let attempts = 0;
    const jobs = await startTestJobs();
    await jobs.work(
      queue,
      async () => {
        attempts += 1;
        if (attempts === 1) await hung.promise;
      },
      { expireInSeconds: 1 },
    );
    const id = (await jobs.send(queue, {}))!;
    await until(async () => (await jobs.boss.getJobById(queue, id))?.state === 'completed');
    expect(attempts).toBe(2);
    hung.resolve();
  });

  it('drains on a graceful stop: stop resolves after the running job finished, which completes', async () => {
    const queue = testQueue('graceful');
    const gate = deferred();
    const started = deferred();
    const order: string[] = [];
    const jobs = await startTestJobs();
    await jobs.work(queue, async () => {
      started.resolve();
      await gate.promise;
      order.push('job finished');
    });
    const id = (await jobs.send(queue, {}))!;
    await started.promise;
    const stopping = jobs.stop({ graceful: true, timeoutMs: 30_000 }).then(() => order.push('stopped'));
    // Time for stop() to resolve if it did not wait for the running job (the order shows it did).
    await new Promise((resolve) => setTimeout(resolve, 200));
    order.push('gate opened');
    gate.resolve();
    await stopping;
    expect(order).toEqual(['gate opened', 'job finished', 'stopped']);
    expect((await jobs.boss.getJobById(queue, id))?.state).toBe('completed');
    // Stopped, it takes no new job: one sent now waits for another instance.
    const later = await startTestJobs();
    const waiting = (await later.send(queue, {}))!;
    // Three polling intervals (500 ms): a stopped instance that still polled would have taken it.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await later.boss.getJobById(queue, waiting))?.state).toBe('created');
  });

  it('enqueues inside a transaction: a job sent in a rolled-back transaction never exists nor runs', async () => {
    const queue = testQueue('transaction');
    const seen: string[] = [];
    const jobs = await startTestJobs();
    await jobs.createQueue(queue);
    let rolledBack: string | null = null;
    await expect(
      testKnex().transaction(async (trx) => {
        rolledBack = await jobs.sendInTransaction(trx, queue, { what: 'rolled back' });
        throw new Error('the change fails');
      }),
    ).rejects.toThrow('the change fails');
    const committed = await testKnex().transaction((trx) => jobs.sendInTransaction(trx, queue, { what: 'committed' }));
    await jobs.work<{ what: string }>(queue, async (job) => void seen.push(job.data.what));
    await until(() => seen.length === 1);
    expect(seen).toEqual(['committed']);
    expect(rolledBack).toEqual(expect.any(String));
    expect(await jobs.boss.getJobById(queue, rolledBack!)).toBeNull();
    expect((await jobs.boss.getJobById(queue, committed!))?.id).toBe(committed);
  });

  it('refuses to enqueue into a queue that does not exist (pg-boss would drop the job)', async () => {
    const jobs = await startTestJobs();
    await expect(testKnex().transaction((trx) => jobs.sendInTransaction(trx, testQueue('missing'), {}))).rejects.toThrow(/does not exist/);
  });

  it('counts runs by queue and outcome (job_runs_total) and the jobs waiting per queue (jobs_queued)', async () => {
    const queue = testQueue('metrics');
    const metrics = new Metrics();
    const jobs = await startTestJobs({ observer: metrics, config: { retryLimit: 0 } });
    metrics.observeJobs(() => jobs.queued());
    await jobs.createQueue(queue);
    await jobs.send(queue, { fail: true });
    await jobs.send(queue, { fail: false });
    expect(await metrics.registry.getSingleMetricAsString('jobs_queued')).toContain(`jobs_queued{queue="${queue}"} 2`);
    await jobs.work<{ fail: boolean }>(queue, async (job) => {
      if (job.data.fail) throw new Error('boom');
    });
    const text = () => metrics.registry.metrics();
    await until(async () => (await text()).includes(`job_runs_total{queue="${queue}",outcome="success"} 1`));
    expect(await text()).toContain(`job_runs_total{queue="${queue}",outcome="failure"} 1`);
    expect(await text()).toContain(`jobs_queued{queue="${queue}"} 0`);
  });
});

/**
 * pg-boss 10 records the end of a worker's job (complete, or fail towards a retry) without
 * awaiting the statement: when that statement lost its connection (the drill's
 * pg_terminate_backend), its rejection was unhandled and ended the process. Here the statement
 * waits on a row lock the test holds, and its backend is terminated meanwhile. Real PostgreSQL
 * only: the embedded server cannot terminate a backend.
 */
describe.runIf(databaseKind() === 'postgres')('Jobs when recording the end of a job loses its connection', () => {
  it.each([
    { end: 'completes', first: async () => undefined, statement: '%SET completed_on = now()%' },
    { end: 'fails', first: async () => Promise.reject(new Error('first run fails')), statement: '%id IN (SELECT UNNEST($2::uuid[])) AND state < %' },
  ])('a run that $end: logged, the job retried once it expires, no unhandled rejection', async ({ first, statement }) => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const queue = testQueue('end-lost');
      const warned: string[] = [];
      const logger = { error: () => undefined, warn: (...args: unknown[]) => void warned.push(String(args[1])), info: () => undefined };
      const jobs = await startTestJobs({ logger });
      // Holds the job's row: pg-boss's statement ending the first run waits on it, on a backend of its own.
      const locker = await testKnex().transaction();
      let runs = 0;
      await jobs.work(
        queue,
        async (job) => {
          runs += 1;
          if (runs > 1) return;
          await locker.raw('SELECT 1 FROM pgboss.job WHERE id = ? FOR UPDATE', [job.id]);
          await first();
        },
        { expireInSeconds: 1 },
      );
      const id = (await jobs.send(queue, {}))!;
      let ending: number | undefined;
      await until(async () => {
        const waiting = await testKnex().raw(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE ?`, [statement]);
        ending = (waiting.rows as Array<{ pid: number }>)[0]?.pid;
        return ending !== undefined;
      });
      await testKnex().raw('SELECT pg_terminate_backend(?)', [ending!]);
      await locker.rollback();
      await until(async () => (await jobs.boss.getJobById(queue, id))?.state === 'completed');
      expect(runs).toBe(2);
      expect(unhandled).toEqual([]);
      expect(warned).toEqual([expect.stringMatching(/could not record the end of a job/)]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
