/**
 * A probe, not a benchmark (`make bench` does not run it), for the choice of where a delivery
 * is enqueued (inside the transaction of the change, or by a scan): what the outbox scan (the
 * `webhooks.dispatch-due` job every WEBHOOK_DISPATCH_INTERVAL_SECONDS) costs in latency, and
 * what a wake-up job enqueued with pg-boss inside each change's transaction would cost per change.
 * - latency: PROBE_EVENTS changes (an organisation row updated and its event recorded, one
 *   matching endpoint), spaced 0 to 500 ms apart, with one instance's job queue at the
 *   production settings; time from COMMIT to the receiver's arrival, p50 / p95 / max.
 * - cost in the transaction: PROBE_TRANSACTIONS such changes one after the other, alternately
 *   without and with `jobs.sendInTransaction(trx, 'probe.wake', {})`; mean ms per change.
 * `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx scripts/bench/probes/webhook-dispatch.ts`
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Knex } from 'knex';
import pino from 'pino';
import { loadConfig } from '../../../src/config';
import { withTransaction } from '../../../src/db/transaction';
import { Jobs } from '../../../src/jobs';
import { EventRepository, eventsJobs, publicEventId } from '../../../src/modules/events';
import { buildServices } from '../../../src/services';
import { createScratchDatabase, percentile, printResult } from '../bench-support';

const EVENTS = Number(process.env.PROBE_EVENTS ?? 40);
const TRANSACTIONS = Number(process.env.PROBE_TRANSACTIONS ?? 400);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function change(knex: Knex, organizationId: string, extra?: (trx: Knex.Transaction) => Promise<unknown>): Promise<string> {
  return withTransaction(knex, async (trx) => {
    await trx('organizations').where({ id: organizationId }).update({ name: `Probe ${crypto.randomUUID().slice(0, 8)}` });
    const event = await new EventRepository(trx).record({
      subjectType: 'invoice',
      subjectId: crypto.randomUUID(),
      type: 'invoice.paid',
      actorUserId: null,
      occurredAt: new Date(),
      organizationId,
      object: { object: 'invoice', status: 'paid' },
    });
    if (extra) await extra(trx);
    return publicEventId(event.id);
  });
}

async function main(): Promise<void> {
  const db = await createScratchDatabase('probe_webhooks');
  const logger = pino({ level: 'silent' });
  const arrived = new Map<string, number>();
  const receiver = http.createServer((req, res) => {
    arrived.set(String(req.headers['webhook-id']), performance.now());
    req.resume();
    req.on('end', () => res.writeHead(200).end());
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  let jobs: Jobs | undefined;
  try {
    const config = loadConfig({ NODE_ENV: 'development', LOG_LEVEL: 'silent' });
    const services = buildServices({ config, knex: db.knex, logger });
    await services.ready();
    jobs = await Jobs.start({ knex: db.knex, config: config.jobs, logger });
    for (const task of eventsJobs(services.webhooks, services.events, config.webhooks, logger)) await jobs.every(task);
    const [org] = (await db.knex('organizations').insert({ name: 'Probe', status: 'active' }).returning('id')) as { id: string }[];
    const orgId = (org as { id: string }).id;
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    await db.knex('webhook_endpoints').insert({ organization_id: orgId, url, events: ['*'], secret: `whsec_${crypto.randomBytes(24).toString('base64')}` });

    const committed = new Map<string, number>();
    for (let i = 0; i < EVENTS; i += 1) {
      const id = await change(db.knex, orgId);
      committed.set(id, performance.now());
      await sleep(Math.random() * 500);
    }
    const deadline = Date.now() + 60_000;
    const delivered = () => [...committed.keys()].filter((id) => arrived.has(id)).length;
    while (delivered() < committed.size && Date.now() < deadline) await sleep(50);
    const latencies = [...committed].map(([id, at]) => (arrived.get(id) ?? Number.NaN) - at).sort((a, b) => a - b);

    await jobs.createQueue('probe.wake');
    const plain: number[] = [];
    const woken: number[] = [];
    for (let i = 0; i < TRANSACTIONS; i += 1) {
      const withWake = i % 2 === 1;
      const started = performance.now();
      await change(db.knex, orgId, withWake ? (trx) => (jobs as Jobs).sendInTransaction(trx, 'probe.wake', {}) : undefined);
      (withWake ? woken : plain).push(performance.now() - started);
    }
    const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
    printResult('webhook-dispatch', {
      settings: { dispatchEverySeconds: config.webhooks.dispatchEverySeconds, jobsPollingMs: config.jobs.pollingIntervalMs },
      latency_commit_to_receiver_ms: {
        events: committed.size,
        delivered: delivered(),
        p50: Math.round(percentile(latencies, 50)),
        p95: Math.round(percentile(latencies, 95)),
        max: Math.round(latencies[latencies.length - 1] ?? Number.NaN),
      },
      change_transaction_ms: {
        transactions_each: plain.length,
        without_wake_job: Number(mean(plain).toFixed(3)),
        with_pgboss_wake_job: Number(mean(woken).toFixed(3)),
        added_per_change: Number((mean(woken) - mean(plain)).toFixed(3)),
      },
    });
  } finally {
    await jobs?.stop({ graceful: false });
    receiver.closeAllConnections();
    receiver.close();
    await db.drop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${String((error as Error)?.stack ?? error)}\n`);
    process.exit(1);
  },
);
