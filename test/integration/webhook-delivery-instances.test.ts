import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Knex } from 'knex';
import pino from 'pino';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKnex } from '../../src/db/database';
import { withTransaction } from '../../src/db/transaction';
import { Jobs } from '../../src/jobs';
import { EventRepository, eventsJobs, publicEventId, type EventType } from '../../src/modules/events';
import { buildServices } from '../../src/services';
import { testConfig } from '../support/app';
import { databaseKind, testDatabaseUrl, testKnex } from '../support/database';
import { TEST_JOBS_CONFIG, until } from '../support/jobs';

/**
 * Webhook delivery across instances and restarts, with real receivers on loopback and the
 * real job queue (the `webhooks.dispatch-due` periodic task of src/modules/events/events-jobs.ts):
 * - an instance that dies between the commit of a change and the delivery of its event: the
 *   next instance on the same database delivers it;
 * - three instances dispatching from one database: every event reaches each matching
 *   endpoint, and duplicates are counted (0).
 * On PostgreSQL each instance has its own pool on the file's own database (only this file's
 * deliveries reach these dispatchers); the embedded server serves one connection, so there
 * the instances share the run's pool (files run one after another).
 */
const KIND = databaseKind();
const logger = pino({ level: 'silent' });

let pools: Knex[] = [];
let newPool: () => Knex;
let closePools: (() => Promise<void>) | undefined;

beforeAll(async () => {
  if (KIND === 'embedded') {
    newPool = () => testKnex();
    return;
  }
  const url = await testDatabaseUrl();
  newPool = () => {
    const pool = createKnex(url, 'postgres', 4);
    pools.push(pool);
    return pool;
  };
  closePools = async () => {
    await Promise.all(pools.map((pool) => pool.destroy()));
    pools = [];
  };
}, 120_000);

afterAll(async () => {
  await Promise.all(running.map((instance) => instance.kill()));
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await closePools?.();
});

interface Delivered {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A receiver on loopback: answers 200 and records every request (path, headers, raw body). */
class Receiver {
  readonly requests: Delivered[] = [];
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      this.requests.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end('ok');
    });
  });
  base = '';

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Ids received at `path`, with how many times each came. */
  counts(path: string): Map<string, number> {
    const counts = new Map<string, number>();
    for (const r of this.requests.filter((r) => r.path === path)) {
      const id = String(r.headers['webhook-id']);
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    return counts;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const receivers: Receiver[] = [];
async function receiver(): Promise<Receiver> {
  const started = await new Receiver().start();
  receivers.push(started);
  return started;
}

/** One application instance's background side: its services and its job queue running the events tasks. */
interface Instance {
  knex: Knex;
  /** Runs of the dispatch task that ended (a `dispatchDue` that found nothing more). */
  dispatchRuns: () => number;
  /** Deliveries this instance claimed and attempted. */
  attempted: () => number;
  /** Stops at once: no drain, running jobs abandoned (what a kill leaves). */
  kill(): Promise<void>;
  /** Claims nothing more from now on (what a process that is about to die does): nothing it commits afterwards is sent by it. */
  stopClaiming(): Promise<void>;
  /** A graceful stop: running jobs finish first. */
  stop(): Promise<void>;
}

const running: Instance[] = [];

async function startInstance(dispatchEverySeconds: number): Promise<Instance> {
  const knex = newPool();
  const config = testConfig({ WEBHOOK_TIMEOUT_MS: '2000', WEBHOOK_DISPATCH_INTERVAL_SECONDS: String(dispatchEverySeconds), WEBHOOK_RETRY_DELAYS_SECONDS: '0,1,1,1' });
  const services = buildServices({ config, knex, logger });
  await services.ready();
  let runs = 0;
  let attempted = 0;
  // Every attempt this instance made, whichever claim started it (the job's, or the one an ended attempt makes).
  services.webhooks.onOutcome(() => {
    attempted += 1;
  });
  const dispatcher = {
    async dispatchDue() {
      const n = await services.webhooks.dispatchDue();
      if (n === 0) runs += 1;
      return n;
    },
  };
  const jobs = await Jobs.start({ knex, config: TEST_JOBS_CONFIG, logger });
  for (const task of eventsJobs(dispatcher, services.events, config.webhooks, logger)) await jobs.every(task);
  let stopped = false;
  const halt = async (graceful: boolean) => {
    if (stopped) return;
    stopped = true;
    await jobs.stop({ graceful, timeoutMs: 30_000 });
    await services.shutdown();
  };
  const instance: Instance = {
    knex,
    dispatchRuns: () => runs,
    attempted: () => attempted,
    kill: () => halt(false),
    stop: () => halt(true),
    stopClaiming: () => services.webhooks.stop(),
  };
  running.push(instance);
  return instance;
}

async function organisation(knex: Knex): Promise<string> {
  const [org] = (await knex('organizations').insert({ name: `Hooks ${crypto.randomUUID().slice(0, 8)}`, status: 'active' }).returning('id')) as { id: string }[];
  return (org as { id: string }).id;
}

async function endpoint(knex: Knex, organizationId: string, url: string, events: string[]): Promise<{ id: string; secret: string }> {
  const secret = `whsec_${crypto.randomBytes(24).toString('base64')}`;
  const [row] = (await knex('webhook_endpoints')
    .insert({ organization_id: organizationId, url, events, secret, description: null, status: 'enabled' })
    .returning('id')) as { id: string }[];
  return { id: (row as { id: string }).id, secret };
}

/**
 * A change and its event, committed together (the outbox: `EventRepository.record` is what
 * every change calls in its transaction): the organisation's name changes, and an event of
 * `type` about one of its objects is recorded. Answers the public event id.
 */
async function change(knex: Knex, organizationId: string, type: EventType): Promise<string> {
  return withTransaction(knex, async (trx) => {
    await trx('organizations').where({ id: organizationId }).update({ name: `Hooks ${crypto.randomUUID().slice(0, 8)}` });
    const objectType = type.slice(0, type.indexOf('.'));
    const event = await new EventRepository(trx).record({
      subjectType: objectType as never,
      subjectId: crypto.randomUUID(),
      type,
      actorUserId: null,
      occurredAt: new Date(),
      organizationId,
      object: { object: objectType, status: 'open' },
    });
    return publicEventId(event.id);
  });
}

function verify(secret: string, delivered: Delivered): { id: string; type: string } {
  return new Webhook(secret).verify(delivered.body, delivered.headers as Record<string, string>) as { id: string; type: string };
}

describe('an instance killed between the commit of a change and the delivery of its event', () => {
  it('leaves the event to the next instance on the same database, which delivers it once', { timeout: 120_000 }, async () => {
    const hook = await receiver();
    // The first instance dispatches at start, then claims nothing more: the change it commits
    // next dies with it undelivered (a process killed right after its commit). Its periodic
    // runs alone would not do: the start run's next slot may begin at once.
    const first = await startInstance(3_600);
    await until(() => first.dispatchRuns() >= 1, 60_000);
    await first.stopClaiming();
    const org = await organisation(first.knex);
    const { id: endpointId, secret } = await endpoint(first.knex, org, `${hook.base}/restart`, ['invoice.*']);
    const eventId = await change(first.knex, org, 'invoice.paid');
    await first.kill();
    // Committed and not delivered: the delivery waits in the outbox.
    const waiting = (await first.knex('webhook_deliveries').where({ endpoint_id: endpointId })) as { status: string; attempt_count: number }[];
    expect(waiting).toEqual([expect.objectContaining({ status: 'pending', attempt_count: 0 })]);
    expect(hook.requests).toEqual([]);

    // A new instance on the same database (the production period of 2 s, and a run at start).
    const second = await startInstance(2);
    await until(() => hook.requests.length >= 1, 60_000);
    await until(async () => ((await second.knex('webhook_deliveries').where({ endpoint_id: endpointId }).first()) as { status: string }).status === 'succeeded', 30_000);
    await second.stop();
    expect(hook.requests).toHaveLength(1);
    const [delivered] = hook.requests as [Delivered];
    expect(delivered.headers['webhook-id']).toBe(eventId);
    expect(verify(secret, delivered)).toMatchObject({ id: eventId, type: 'invoice.paid' });
    // (On the embedded back-end the run's database is shared: the first instance's start run may
    // have attempted other files' leftover deliveries, never this one: pending with 0 attempts above.)
    expect(second.attempted()).toBeGreaterThanOrEqual(1);
    const done = (await second.knex('webhook_deliveries').where({ endpoint_id: endpointId }).first()) as { status: string; attempt_count: number };
    expect(done).toMatchObject({ status: 'succeeded', attempt_count: 1 });
  });
});

describe('three instances dispatching from one database', () => {
  it('deliver every event to each matching endpoint exactly once (duplicates counted: 0)', { timeout: 180_000 }, async () => {
    const hook = await receiver();
    const instances: Instance[] = [];
    for (let i = 0; i < 3; i += 1) instances.push(await startInstance(1));
    const [a, b] = instances as [Instance, Instance, Instance];
    const org = await organisation(a.knex);
    const other = await organisation(a.knex);
    const endpoints = {
      all: await endpoint(a.knex, org, `${hook.base}/all`, ['*']),
      invoices: await endpoint(a.knex, org, `${hook.base}/invoices`, ['invoice.*']),
      paid: await endpoint(b.knex, org, `${hook.base}/paid`, ['invoice.paid', 'payment.succeeded']),
      foreign: await endpoint(b.knex, other, `${hook.base}/foreign`, ['*']),
    };
    const types: EventType[] = ['invoice.created', 'invoice.paid', 'payment.succeeded', 'payment_link.created', 'escrow.funded'];
    const sent: { id: string; type: EventType }[] = [];
    // Changes committed on every instance at once, while all three dispatch.
    await Promise.all(
      instances.map(async (instance, i) => {
        for (let n = 0; n < 20; n += 1) {
          const type = types[(n + i) % types.length] as EventType;
          sent.push({ id: await change(instance.knex, org, type), type });
        }
      }),
    );
    const expected = {
      all: sent.map((e) => e.id),
      invoices: sent.filter((e) => e.type.startsWith('invoice.')).map((e) => e.id),
      paid: sent.filter((e) => e.type === 'invoice.paid' || e.type === 'payment.succeeded').map((e) => e.id),
    };
    const ids = Object.values(endpoints).map((e) => e.id);
    const settled = async () => {
      const open = (await a.knex('webhook_deliveries').whereIn('endpoint_id', ids).whereNot('status', 'succeeded').count({ n: '*' })) as { n: string | number }[];
      return Number(open[0]?.n) === 0;
    };
    await until(settled, 150_000);
    // A graceful stop lets every attempt under way finish before the counts are read.
    await Promise.all(instances.map((instance) => instance.stop()));

    for (const [name, wanted] of Object.entries(expected) as [keyof typeof expected, string[]][]) {
      const counts = hook.counts(`/${name}`);
      const duplicates = [...counts.values()].reduce((sum, n) => sum + (n - 1), 0);
      expect({ name, received: [...counts.keys()].sort(), duplicates }).toEqual({ name, received: [...wanted].sort(), duplicates: 0 });
      const secret = endpoints[name].secret;
      for (const delivered of hook.requests.filter((r) => r.path === `/${name}`)) expect(verify(secret, delivered).id).toBe(delivered.headers['webhook-id']);
    }
    expect(hook.counts('/foreign').size).toBe(0);
    const rows = (await a.knex('webhook_deliveries').whereIn('endpoint_id', ids).select('status', 'attempt_count')) as { status: string; attempt_count: number }[];
    expect(rows).toHaveLength(expected.all.length + expected.invoices.length + expected.paid.length);
    expect(rows.every((row) => row.status === 'succeeded' && row.attempt_count === 1)).toBe(true);
    const attempted = instances.map((instance) => instance.attempted());
    expect(attempted.reduce((sum, n) => sum + n, 0)).toBeGreaterThanOrEqual(rows.length);
  });
});
