import type { Knex } from 'knex';
import PgBoss from 'pg-boss';
import { completeJobs, failJobsById } from 'pg-boss/src/plans';
import type { Logger } from 'pino';
import type { JobsConfig } from '../config';
import { queryRaw } from '../db/prepared';
import type { PeriodicTask } from './periodic-task';

/** What a worker is told of a job: its queue, id, and the data it was sent with. */
export interface JobContext<Data> {
  queue: string;
  id: string;
  data: Data;
}

export type JobHandler<Data> = (job: JobContext<Data>) => Promise<void>;

/** A queue's own settings; the config's defaults otherwise. */
export interface QueueOptions {
  retryLimit?: number;
  retryDelaySeconds?: number;
  retryBackoff?: boolean;
  /** A job still running after this long is failed (its worker died) and retried. */
  expireInSeconds?: number;
}

export type SendOptions = Omit<PgBoss.SendOptions, 'db'>;

/** What the queue reports (the metrics): each run's outcome, and the jobs waiting per queue. */
export interface JobsObserver {
  jobRun(queue: string, outcome: 'success' | 'failure'): void;
}

export interface JobsDeps {
  knex: Knex;
  config: JobsConfig;
  logger: Pick<Logger, 'error' | 'warn' | 'info'>;
  observer?: JobsObserver;
  /** pg-boss's schema; `pgboss` by default. */
  schema?: string;
}

/** The one slot key of a periodic task's runs (see `every`). */
const TICK = 'tick';
const START = 'start';

/**
 * pg-boss's `db` adapter over a knex pool or transaction: every statement runs on the
 * application's own connections (on the embedded back-end the server takes only one, so
 * pg-boss's own pool cannot connect), and inside a transaction on the transaction's connection.
 */
export function knexExecutor(db: Knex | Knex.Transaction): PgBoss.Db {
  return {
    executeSql: (text: string, values?: unknown[]) => queryRaw(db, { text, values: values ?? [] }),
  };
}

/**
 * The queue's own executor. pg-boss 10 records the end of a worker's job (complete, or fail
 * towards a retry) without awaiting the statement (src/manager.js, `watch`; 11 awaits it but
 * needs Node 22): when that statement lost its connection (a terminated backend, a failover),
 * the rejection was unhandled and Node ended the process (the drill, after pg_terminate_backend).
 * Those two statements' failures (nothing else here sends them) are logged and answered as
 * "no job changed": the job stays active and is retried once its expireInSeconds has passed,
 * as when its worker dies.
 */
function queueExecutor(knex: Knex, schema: string, logger: Pick<Logger, 'warn'>): PgBoss.Db {
  const unawaited = new Set([completeJobs(schema), failJobsById(schema)]);
  const db = knexExecutor(knex);
  return {
    async executeSql(text: string, values: unknown[]) {
      try {
        return await db.executeSql(text, values);
      } catch (err) {
        if (!unawaited.has(text)) throw err;
        logger.warn({ err, queue: values[0] }, 'could not record the end of a job; it runs again once it expires');
        return { rows: [{ count: '0' }] };
      }
    },
  };
}

/**
 * All background work of an instance, over pg-boss 10 (a PostgreSQL job queue: a job is
 * claimed by one worker with SKIP LOCKED, retried when it fails or its worker dies, and
 * stays in the database across restarts). Build it with `Jobs.start`, register workers
 * with `work` and periodic tasks with `every`, enqueue with `send` or, within the
 * transaction of a change, `sendInTransaction`; `stop` drains the running jobs.
 */
export class Jobs {
  private readonly queues = new Set<string>();

  private constructor(
    readonly boss: PgBoss,
    private readonly deps: JobsDeps,
  ) {}

  static async start(deps: JobsDeps): Promise<Jobs> {
    const { config } = deps;
    const schema = deps.schema ?? 'pgboss';
    const boss = new PgBoss({
      db: queueExecutor(deps.knex, schema, deps.logger),
      schema,
      maintenanceIntervalSeconds: config.maintenanceIntervalSeconds,
      // Cron schedules are looked at every 30 seconds by one instance at a time.
      cronMonitorIntervalSeconds: 30,
    });
    // pg-boss reports failures of its own loops (polling, maintenance) as events: an
    // EventEmitter 'error' nobody listens to would end the process.
    boss.on('error', (err) => deps.logger.error({ err }, 'job queue error'));
    try {
      await boss.start();
    } catch (error) {
      // Nothing of a failed start keeps running (its timers would hold the process).
      await boss.stop({ graceful: false, close: false, wait: true }).catch(() => undefined);
      throw error;
    }
    return new Jobs(boss, deps);
  }

  /** Creates the queue if it does not exist yet (idempotent: later settings do not change it). */
  async createQueue(queue: string, options: QueueOptions = {}): Promise<void> {
    const { config } = this.deps;
    await this.boss.createQueue(queue, {
      name: queue,
      retryLimit: options.retryLimit ?? config.retryLimit,
      retryDelay: options.retryDelaySeconds ?? config.retryDelaySeconds,
      retryBackoff: options.retryBackoff ?? true,
      expireInSeconds: options.expireInSeconds ?? config.expireInSeconds,
    });
    this.queues.add(queue);
  }

  /**
   * Runs `handler` for each job of `queue`, one at a time on this instance (each job is
   * claimed by one worker across all instances). A handler that throws fails the job, which
   * is retried after the queue's delay until its retry limit; one still running after the
   * queue's `expireInSeconds` (or whose process died) is failed and retried too.
   */
  async work<Data extends object>(queue: string, handler: JobHandler<Data>, options: QueueOptions = {}): Promise<void> {
    await this.createQueue(queue, options);
    await this.boss.work<Data>(queue, { batchSize: 1, pollingIntervalSeconds: this.deps.config.pollingIntervalMs / 1000 }, async (jobs) => {
      for (const job of jobs) await this.run(queue, handler, { queue, id: job.id, data: job.data });
    });
  }

  private async run<Data>(queue: string, handler: JobHandler<Data>, job: JobContext<Data>): Promise<void> {
    try {
      await handler(job);
      this.deps.observer?.jobRun(queue, 'success');
    } catch (err) {
      this.deps.observer?.jobRun(queue, 'failure');
      this.deps.logger.error({ err, queue, jobId: job.id }, `job of "${queue}" failed; it is retried until its retry limit`);
      throw err;
    }
  }

  /** Enqueues a job now (outside any transaction). Its queue must exist (`work` or `createQueue`). */
  async send(queue: string, data: object, options: SendOptions = {}): Promise<string | null> {
    return this.boss.send(queue, data, options);
  }

  /**
   * Enqueues a job in the transaction of a change: it exists, and runs, only if `trx`
   * commits. Answers the job's id, or null when a `singletonKey` / `singletonSeconds` refused
   * it (one such job is there already). Throws when the queue does not exist (pg-boss would
   * drop the job silently).
   */
  async sendInTransaction(trx: Knex.Transaction, queue: string, data: object, options: SendOptions = {}): Promise<string | null> {
    const id = await this.boss.send(queue, data, { ...options, db: knexExecutor(trx) });
    if (id === null && options.singletonKey === undefined && options.singletonSeconds === undefined) {
      throw new Error(`job queue "${queue}" does not exist: create it (jobs.work or jobs.createQueue) before sending to it`);
    }
    return id;
  }

  /**
   * Runs a task once per `everySeconds` across all instances. Its runs are jobs of a queue
   * named after the task, throttled by pg-boss to one job per slot of `everySeconds` (a
   * unique index over the queue, the slot and the key `tick`: whoever inserts second is
   * refused). Each run first enqueues the next slot's job (so the chain survives a run that
   * fails), then works; a pg-boss schedule every minute (cluster-wide) enqueues the current
   * slot's job if the chain ever broke (every retry of a run exhausted). With `runAtStart`,
   * starting an instance enqueues one run now (key `start`, one per slot across instances).
   * Periods under a minute are why this is not a bare pg-boss cron schedule (a minute at least).
   */
  async every(task: PeriodicTask): Promise<void> {
    const slotSeconds = Math.max(1, Math.round(task.everySeconds));
    const next = () => this.boss.sendDebounced(task.queue, {}, {}, slotSeconds, TICK);
    await this.work(
      task.queue,
      async () => {
        await next();
        await task.run();
      },
      { expireInSeconds: task.expireInSeconds },
    );
    await this.boss.schedule(task.queue, '* * * * *', {}, { singletonKey: TICK, singletonSeconds: slotSeconds });
    if (task.runAtStart) await this.boss.sendThrottled(task.queue, {}, {}, slotSeconds, START);
    else await next();
  }

  /** Jobs waiting (queued or waiting for a retry) per queue of this instance. */
  async queued(): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const queue of this.queues) counts[queue] = await this.boss.getQueueSize(queue);
    return counts;
  }

  /**
   * Stops taking jobs; with `graceful` (the default) waits up to `timeoutMs` for the running
   * ones to finish, then fails what still runs (retried by another instance). Never closes
   * the knex pool: the application does, after this.
   */
  async stop(options: { graceful?: boolean; timeoutMs?: number } = {}): Promise<void> {
    await this.boss.stop({ graceful: options.graceful ?? true, timeout: options.timeoutMs ?? 30_000, close: false, wait: true });
  }
}
