/**
 * A probe, not a benchmark (`make bench` does not run it): does one organisation's hanging
 * receivers delay another organisation's webhooks? With one instance's job queue at the default
 * settings (WEBHOOK_DISPATCH_INTERVAL_SECONDS=2, WEBHOOK_TIMEOUT_MS=15000, the default bounds):
 * - baseline: organisation A (one receiver answering 200 at once) alone, PROBE_EVENTS changes
 *   spaced 0 to 500 ms apart; time from COMMIT to A's receiver, p50 / p95 / max;
 * - under load: organisation B has 16 endpoints subscribed to `*`, all pointing at a receiver
 *   that accepts the connection and never answers, and a burst of PROBE_BURST events (16
 *   deliveries each); then A's PROBE_EVENTS changes as above. Target: A's p95 under 3 s.
 * `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx scripts/bench/probes/webhook-fairness.ts`
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
const BURST = Number(process.env.PROBE_BURST ?? 50);
const HANGING_ENDPOINTS = 16;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function change(knex: Knex, organizationId: string): Promise<string> {
  return withTransaction(knex, async (trx) => {
    const event = await new EventRepository(trx).record({
      subjectType: 'invoice',
      subjectId: crypto.randomUUID(),
      type: 'invoice.created',
      actorUserId: null,
      occurredAt: new Date(),
      organizationId,
      object: { object: 'invoice', status: 'draft' },
    });
    return publicEventId(event.id);
  });
}

async function organisation(knex: Knex, name: string): Promise<string> {
  const [org] = (await knex('organizations').insert({ name, status: 'active' }).returning('id')) as { id: string }[];
  return (org as { id: string }).id;
}

async function endpoint(knex: Knex, organizationId: string, url: string): Promise<void> {
  await knex('webhook_endpoints').insert({ organization_id: organizationId, url, events: ['*'], secret: `whsec_${crypto.randomBytes(24).toString('base64')}` });
}

function listen(server: http.Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

async function main(): Promise<void> {
  const db = await createScratchDatabase('probe_webhook_fairness');
  const logger = pino({ level: 'silent' });
  const arrived = new Map<string, number>();
  const fast = http.createServer((req, res) => {
    arrived.set(String(req.headers['webhook-id']), performance.now());
    req.resume();
    req.on('end', () => res.writeHead(200).end());
  });
  let hangingRequests = 0;
  const hanging = http.createServer((req) => {
    hangingRequests += 1;
    req.resume();
  });
  const fastBase = await listen(fast);
  const hangingBase = await listen(hanging);
  let jobs: Jobs | undefined;
  let services: ReturnType<typeof buildServices> | undefined;
  try {
    const config = loadConfig({ NODE_ENV: 'development', LOG_LEVEL: 'silent' });
    services = buildServices({ config, knex: db.knex, logger });
    await services.ready();
    jobs = await Jobs.start({ knex: db.knex, config: config.jobs, logger });
    for (const task of eventsJobs(services.webhooks, services.events, config.webhooks, logger)) await jobs.every(task);
    const a = await organisation(db.knex, 'Probe A');
    await endpoint(db.knex, a, `${fastBase}/a`);

    const measure = async (): Promise<{ events: number; delivered: number; p50: number; p95: number; max: number }> => {
      const committed = new Map<string, number>();
      for (let i = 0; i < EVENTS; i += 1) {
        const id = await change(db.knex, a);
        committed.set(id, performance.now());
        await sleep(Math.random() * 500);
      }
      const deadline = Date.now() + 120_000;
      const delivered = () => [...committed.keys()].filter((id) => arrived.has(id)).length;
      while (delivered() < committed.size && Date.now() < deadline) await sleep(50);
      const latencies = [...committed].map(([id, at]) => (arrived.get(id) ?? Number.NaN) - at).sort((x, y) => x - y);
      return { events: committed.size, delivered: delivered(), p50: Math.round(percentile(latencies, 50)), p95: Math.round(percentile(latencies, 95)), max: Math.round(latencies[latencies.length - 1] ?? Number.NaN) };
    };

    const baseline = await measure();
    const b = await organisation(db.knex, 'Probe B');
    for (let i = 0; i < HANGING_ENDPOINTS; i += 1) await endpoint(db.knex, b, `${hangingBase}/b${i}`);
    for (let i = 0; i < BURST; i += 1) await change(db.knex, b);
    // B's attempts are under way (and hanging) before A's changes start.
    while (hangingRequests === 0) await sleep(50);
    const underLoad = await measure();
    printResult('webhook-fairness', {
      settings: {
        dispatchEverySeconds: config.webhooks.dispatchEverySeconds,
        timeoutMs: config.webhooks.timeoutMs,
        connectTimeoutMs: config.webhooks.connectTimeoutMs,
        maxInFlight: config.webhooks.maxInFlight,
        maxInFlightPerEndpoint: config.webhooks.maxInFlightPerEndpoint,
        maxInFlightPerOrganization: config.webhooks.maxInFlightPerOrganization,
        jobsPollingMs: config.jobs.pollingIntervalMs,
      },
      hanging: { endpoints: HANGING_ENDPOINTS, burst_events: BURST, deliveries: BURST * HANGING_ENDPOINTS, requests_received_while_measuring: hangingRequests },
      other_organisation_commit_to_receiver_ms: { baseline, under_load: underLoad },
      target_p95_ms: 3_000,
      met: underLoad.p95 < 3_000 && underLoad.delivered === underLoad.events,
    });
  } finally {
    await jobs?.stop({ graceful: false });
    fast.closeAllConnections();
    hanging.closeAllConnections();
    await services?.webhooks.stop();
    fast.close();
    hanging.close();
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
