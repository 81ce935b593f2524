import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { EventRepository, WebhookService } from '../../src/modules/events';
import { testKnex } from '../support/database';
import { createOrganization } from '../support/factories';
import { until } from '../support/jobs';

/**
 * Attempts run side by side, bounded per endpoint and per organisation: a receiver that accepts
 * the connection and never answers holds only its own endpoint's attempts (and at most its
 * organisation's share) until the response timeout; another organisation's receiver is
 * attempted meanwhile. Every assertion waits on a condition (what each receiver has seen, what
 * the deliveries record), never on elapsed time.
 */
class Receiver {
  readonly requests: { path: string; id: string }[] = [];
  /** Requests received and not answered yet, per path, and the most seen at once. */
  private readonly open = new Map<string, number>();
  maxOpen = 0;
  readonly maxOpenPerPath = new Map<string, number>();
  private readonly server: http.Server;
  base = '';

  constructor(private readonly hang: boolean) {
    this.server = http.createServer((req, res) => {
      const path = req.url ?? '';
      req.resume();
      req.on('end', () => {
        this.requests.push({ path, id: String(req.headers['webhook-id']) });
        if (!this.hang) {
          res.writeHead(200).end('ok');
          return;
        }
        this.open.set(path, (this.open.get(path) ?? 0) + 1);
        this.maxOpenPerPath.set(path, Math.max(this.maxOpenPerPath.get(path) ?? 0, this.open.get(path) ?? 0));
        this.maxOpen = Math.max(this.maxOpen, [...this.open.values()].reduce((a, b) => a + b, 0));
        res.on('close', () => this.open.set(path, (this.open.get(path) ?? 1) - 1));
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const receivers: Receiver[] = [];
async function receiver(hang: boolean): Promise<Receiver> {
  const started = await new Receiver(hang).start();
  receivers.push(started);
  return started;
}

const BOUNDS = { maxInFlight: 8, maxInFlightPerEndpoint: 2, maxInFlightPerOrganization: 3 };
let knex: Knex;
const services: WebhookService[] = [];

function webhookService(lookupAll?: (hostname: string) => Promise<{ address: string; family: number }[]>): WebhookService {
  const service = new WebhookService({
    knex,
    options: { timeoutMs: 4_000, connectTimeoutMs: 1_000, retryDelaysSeconds: [0, 3_600], disableAfterHours: 120, allowPrivateTargets: true, ...BOUNDS },
    clock: () => new Date(),
    lookupAll,
  });
  services.push(service);
  return service;
}

beforeAll(() => {
  knex = testKnex();
});

afterAll(async () => {
  await Promise.all(services.map((service) => service.stop()));
  await Promise.all(receivers.map((r) => r.close()));
});

async function endpoint(organizationId: string, url: string): Promise<string> {
  const [row] = (await knex('webhook_endpoints')
    .insert({ organization_id: organizationId, url, events: ['*'], secret: `whsec_${crypto.randomBytes(24).toString('base64')}` })
    .returning('id')) as { id: string }[];
  return (row as { id: string }).id;
}

/** An event of the organisation, committed with its deliveries (one per matching endpoint). */
async function event(organizationId: string): Promise<void> {
  await withTransaction(knex, (trx) =>
    new EventRepository(trx).record({
      subjectType: 'invoice',
      subjectId: crypto.randomUUID(),
      type: 'invoice.created',
      actorUserId: null,
      occurredAt: new Date(),
      organizationId,
      object: { object: 'invoice', status: 'draft' },
    }),
  );
}

async function attempts(endpointIds: string[]): Promise<{ status: string; attempt_count: number }[]> {
  return (await knex('webhook_deliveries').whereIn('endpoint_id', endpointIds).select('status', 'attempt_count')) as { status: string; attempt_count: number }[];
}

describe('a hanging receiver of one organisation beside a fast receiver of another', () => {
  it('one batch: the fast receiver gets its event while the hanging one still holds its attempts', { timeout: 90_000 }, async () => {
    const hanging = await receiver(true);
    const fast = await receiver(false);
    const b = await createOrganization();
    const a = await createOrganization();
    const slow = await endpoint(b.id, `${hanging.base}/b`);
    for (let i = 0; i < 3; i += 1) await event(b.id);
    const quick = await endpoint(a.id, `${fast.base}/a`);
    await event(a.id);

    const run = webhookService().runDue();
    await until(() => fast.requests.some((r) => r.path === '/a'), 60_000);
    // When A's event arrived, none of B's attempts had ended: A did not wait for B's timeout.
    expect((await attempts([slow])).map((d) => d.attempt_count)).toEqual([0, 0, 0]);
    expect(hanging.requests.length).toBeGreaterThanOrEqual(1);
    await run;
    expect(await attempts([quick])).toEqual([{ status: 'succeeded', attempt_count: 1 }]);
    // B's endpoint had at most its bound under way; the third waits for the next claim.
    expect(hanging.maxOpenPerPath.get('/b')).toBeLessThanOrEqual(BOUNDS.maxInFlightPerEndpoint);
    const slowRows = await attempts([slow]);
    expect(slowRows.filter((d) => d.attempt_count === 1).every((d) => d.status === 'failed')).toBe(true);
  });

  it('the dispatcher: 16 hanging endpoints of one organisation and a burst of its events hold at most its share; another organisation is delivered meanwhile', { timeout: 90_000 }, async () => {
    const hanging = await receiver(true);
    const fast = await receiver(false);
    const b = await createOrganization();
    const a = await createOrganization();
    const slow: string[] = [];
    for (let i = 0; i < 16; i += 1) slow.push(await endpoint(b.id, `${hanging.base}/b${i}`));
    for (let i = 0; i < 3; i += 1) await event(b.id);
    const quick = await endpoint(a.id, `${fast.base}/a`);
    const service = webhookService();

    // The claim starts the attempts and answers without waiting for them.
    const claimed = await service.dispatchDue();
    expect(claimed).toBeGreaterThan(0);
    expect((await attempts(slow)).every((d) => d.attempt_count === 0)).toBe(true);
    await until(() => hanging.requests.length >= BOUNDS.maxInFlightPerOrganization, 30_000);

    // A's event comes after B's burst, while B's receivers hang: the next claim takes it.
    await event(a.id);
    await service.dispatchDue();
    await until(async () => (await attempts([quick]))[0]?.status === 'succeeded', 60_000);
    const bRows = await attempts(slow);
    expect(bRows.filter((d) => d.attempt_count > 0)).toEqual([]);
    // B never had more than its organisation's share under way, nor an endpoint more than its bound.
    expect(hanging.maxOpen).toBeLessThanOrEqual(BOUNDS.maxInFlightPerOrganization);
    for (const open of hanging.maxOpenPerPath.values()) expect(open).toBeLessThanOrEqual(BOUNDS.maxInFlightPerEndpoint);
    await service.stop();
  });

  it('a receiver that cannot even be connected to fails on the connect timeout, before the response timeout', { timeout: 30_000 }, async () => {
    const org = await createOrganization();
    // A name whose resolution never ends: the connection is never made.
    const service = webhookService(() => new Promise(() => undefined));
    const id = await endpoint(org.id, 'http://never-resolves.hooks.example:8080/h');
    const [row] = (await knex('webhook_endpoints').where({ id }).select('id')) as { id: string }[];
    const tested = await service.test(org.id, (row as { id: string }).id);
    expect(tested.attempts[0]).toMatchObject({ http_status: null, error: 'connect timeout after 1000 ms' });
  });
});
