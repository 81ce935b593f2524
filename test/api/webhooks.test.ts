import crypto from 'node:crypto';
import http from 'node:http';
import { Webhook } from 'standardwebhooks';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { EventRepository, WebhookService } from '../../src/modules/events';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { bearer, businessPath, createOrganization, memberToken, type TestOrganization } from '../support/factories';
import { createCustomer } from '../support/invoice-factories';
import { until } from '../support/jobs';
import { Receiver } from '../support/webhook-receiver';

let app: App;
let clock = new Date();
const receivers: Receiver[] = [];

async function receiver(): Promise<Receiver> {
  const started = await new Receiver().start();
  receivers.push(started);
  return started;
}

beforeAll(async () => {
  app = await buildTestApp({ now: () => clock, env: { WEBHOOK_TIMEOUT_MS: '500', WEBHOOK_RETRY_DELAYS_SECONDS: '0,0,0', WEBHOOK_DISABLE_AFTER_HOURS: '120' } });
});

afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
});

interface Org {
  org: TestOrganization;
  token: string;
  path: (suffix?: string) => string;
}

async function organisation(): Promise<Org> {
  const org = await createOrganization();
  const token = await memberToken(app, org, 'owner');
  return { org, token, path: (suffix = '') => `${businessPath(org.id)}/webhook-endpoints${suffix}` };
}

async function createEndpoint(o: Org, url: string, events: string[] = ['*']): Promise<{ id: string; secret: string }> {
  const res = await request(app).post(o.path()).set(bearer(o.token)).send({ url, events, description: 'Test receiver' });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { id: res.body.data.id as string, secret: res.body.data.secret as string };
}

/** An invoice.created event in the organisation (one delivery per matching endpoint). */
async function invoiceCreated(o: Org): Promise<string> {
  const customer = await createCustomer(o.org);
  const res = await request(app)
    .post(`${businessPath(o.org.id)}/invoices`)
    .set(bearer(o.token))
    .send({ kind: 'invoice', customer_id: customer.id, currency: 'XOF', line_items: [{ description: 'Work', quantity: 1, unit_amount: '1000' }] });
  expect(res.status).toBe(201);
  return res.body.data.id as string;
}

/** Attempts the endpoint's due deliveries (as the dispatcher would, without touching other tests' rows). */
async function deliverDue(endpointId: string): Promise<number> {
  const due = (await testKnex()('webhook_deliveries')
    .where({ endpoint_id: endpointId })
    .whereIn('status', ['pending', 'failed'])
    .whereNotNull('next_attempt_at')
    .where('next_attempt_at', '<=', clock)
    .orderBy('created_at')) as { id: string }[];
  for (const row of due) await app.services.webhooks.deliver(row.id);
  return due.length;
}

function verify(secret: string, delivered: { headers: http.IncomingHttpHeaders; body: string }): unknown {
  return new Webhook(secret).verify(delivered.body, delivered.headers as Record<string, string>);
}

describe('webhook endpoints: CRUD', () => {
  it('creates (secret shown once), lists, reads, changes and deletes an endpoint', async () => {
    const o = await organisation();
    const created = await request(app).post(o.path()).set(bearer(o.token)).send({ url: 'https://hooks.example.com/a', events: ['invoice.*', 'payment.succeeded'] });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ object: 'webhook_endpoint', url: 'https://hooks.example.com/a', status: 'enabled', events: ['invoice.*', 'payment.succeeded'], description: null });
    expect(created.body.data.secret).toMatch(/^whsec_/);
    const id = created.body.data.id as string;
    const one = await request(app).get(o.path(`/${id}`)).set(bearer(o.token));
    expect(one.status).toBe(200);
    expect(one.body.data.secret).toBeUndefined();
    const list = await request(app).get(o.path()).set(bearer(o.token));
    expect(list.body.data.data.map((e: { id: string }) => e.id)).toEqual([id]);
    const patched = await request(app).patch(o.path(`/${id}`)).set(bearer(o.token)).send({ status: 'disabled', description: 'paused' });
    expect(patched.body.data).toMatchObject({ status: 'disabled', disabled_reason: 'manual', description: 'paused' });
    const enabled = await request(app).patch(o.path(`/${id}`)).set(bearer(o.token)).send({ status: 'enabled' });
    expect(enabled.body.data).toMatchObject({ status: 'enabled', disabled_reason: null });
    expect((await request(app).delete(o.path(`/${id}`)).set(bearer(o.token))).status).toBe(200);
    expect((await request(app).get(o.path(`/${id}`)).set(bearer(o.token))).status).toBe(404);
  });

  it('another organisation’s endpoint, secret and deliveries answer 404 on every route', async () => {
    const mine = await organisation();
    const theirs = await organisation();
    const { id } = await createEndpoint(theirs, 'https://hooks.example.com/theirs');
    const deliveryId = crypto.randomUUID();
    const calls = [
      request(app).get(mine.path(`/${id}`)),
      request(app).patch(mine.path(`/${id}`)).send({ description: 'x' }),
      request(app).delete(mine.path(`/${id}`)),
      request(app).post(mine.path(`/${id}/rotate-secret`)).send({}),
      request(app).post(mine.path(`/${id}/test`)),
      request(app).get(mine.path(`/${id}/deliveries`)),
      request(app).post(mine.path(`/${id}/deliveries/${deliveryId}/retry`)),
    ];
    for (const [index, call] of calls.entries()) {
      const res = await call.set(bearer(mine.token));
      expect(res.status, `call ${index}`).toBe(404);
      expect(res.body).toMatchObject({ success: false, error: 'NotFound' });
    }
    expect((await request(app).get(theirs.path(`/${id}`)).set(bearer(theirs.token))).status).toBe(200);
  });

  it.each([
    [{ url: 'not a url', events: ['*'] }, 'body.url'],
    [{ url: 'https://hooks.example.com/x', events: [] }, 'body.events'],
    [{ url: 'https://hooks.example.com/x', events: ['invoice.exploded'] }, 'body.events'],
    [{ url: 'https://hooks.example.com/x', events: ['nothing.*'] }, 'body.events'],
    [{ url: 'https://hooks.example.com/x' }, 'body.events'],
    [{ url: 'https://hooks.example.com/x', events: ['*'], secret: 'whsec_mine' }, 'body.secret'],
  ])('refuses %o with 400 ValidationError naming %s', async (body, field) => {
    const o = await organisation();
    const res = await request(app).post(o.path()).set(bearer(o.token)).send(body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ success: false, error: 'ValidationError' });
    expect(JSON.stringify(res.body.details)).toContain(field);
  });

  it('allows 16 endpoints per organisation, then answers 422 TooManyWebhookEndpoints', async () => {
    const o = await organisation();
    for (let i = 0; i < 16; i += 1) await createEndpoint(o, `https://hooks.example.com/${i}`);
    const res = await request(app).post(o.path()).set(bearer(o.token)).send({ url: 'https://hooks.example.com/17', events: ['*'] });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ success: false, error: 'TooManyWebhookEndpoints', details: { max: 16 } });
  });

  it('with private targets refused (production settings), http, loopback, metadata and userinfo URLs answer 422 WebhookUrlNotAllowed', async () => {
    const strict = await buildTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' } });
    const org = await createOrganization();
    const token = await memberToken(strict, org, 'admin');
    for (const [url, reason] of [
      ['http://hooks.example.com/x', 'scheme'],
      ['https://127.0.0.1/x', 'private_address'],
      ['https://169.254.169.254/latest', 'private_address'],
      ['https://[::1]/x', 'private_address'],
      ['https://user:pw@hooks.example.com/x', 'userinfo'],
      ['https://hooks.example.com:25/x', 'port'],
      ['https://localhost/x', 'private_address'],
      ['https://10.0.0.8/x', 'private_address'],
      ['https://172.16.5.4/x', 'private_address'],
      ['https://192.168.1.1/x', 'private_address'],
      ['https://100.64.1.1/x', 'private_address'],
      ['https://[fe80::1]/x', 'private_address'],
      ['https://[::ffff:127.0.0.1]/x', 'private_address'],
      ['https://[fd00:ec2::254]/x', 'private_address'],
      ['https://hooks.example.com:80/x', 'port'],
    ]) {
      const res = await request(strict).post(`${businessPath(org.id)}/webhook-endpoints`).set(bearer(token)).send({ url, events: ['*'] });
      expect(res.status, url).toBe(422);
      expect(res.body, url).toMatchObject({ success: false, error: 'WebhookUrlNotAllowed', details: { reason } });
    }
    // Changing the URL of an endpoint is checked the same way.
    const created = await request(strict).post(`${businessPath(org.id)}/webhook-endpoints`).set(bearer(token)).send({ url: 'https://8.8.8.8/hooks', events: ['*'] });
    expect(created.status).toBe(201);
    const patched = await request(strict).patch(`${businessPath(org.id)}/webhook-endpoints/${created.body.data.id}`).set(bearer(token)).send({ url: 'https://169.254.169.254/latest' });
    expect(patched.status).toBe(422);
    expect(patched.body).toMatchObject({ success: false, error: 'WebhookUrlNotAllowed', details: { reason: 'private_address' } });
  });

  it.each([
    [{ events: [] }, 'body.events'],
    [{ events: ['invoice.exploded'] }, 'body.events'],
    [{ url: 'not a url' }, 'body.url'],
    [{ status: 'paused' }, 'body.status'],
  ])('refuses the change %o of an endpoint with 400 ValidationError naming %s', async (body, field) => {
    const o = await organisation();
    const { id } = await createEndpoint(o, 'https://hooks.example.com/p');
    const res = await request(app).patch(o.path(`/${id}`)).set(bearer(o.token)).send(body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ success: false, error: 'ValidationError' });
    expect(JSON.stringify(res.body.details)).toContain(field);
  });
});

describe('delivery (Standard Webhooks 1.0, real receivers on loopback)', () => {
  it('delivers a signed event that the standardwebhooks verifier accepts, through the dispatcher', async () => {
    const hook = await receiver();
    const o = await organisation();
    const { id, secret } = await createEndpoint(o, hook.url, ['invoice.*']);
    const invoiceId = await invoiceCreated(o);
    const [delivery] = (await testKnex()('webhook_deliveries').where({ endpoint_id: id })) as { id: string }[];
    expect(delivery).toBeDefined();
    // The dispatcher's own claim (SKIP LOCKED) finds it among the due deliveries.
    while (hook.requests.length === 0) expect(await app.services.webhooks.runDue()).toBeGreaterThan(0);
    const [got] = hook.requests;
    const payload = verify(secret, got as { headers: http.IncomingHttpHeaders; body: string }) as { id: string; type: string; data: { object: { id: string } } };
    expect(payload).toMatchObject({ object: 'event', type: 'invoice.created', object_id: invoiceId, sequence: 1 });
    expect(got?.headers['webhook-id']).toBe(payload.id);
    expect(got?.headers['content-type']).toBe('application/json');
    const events = await request(app).get(`${businessPath(o.org.id)}/events/${payload.id}`).set(bearer(o.token));
    expect(events.body.data).toEqual(payload);
    const deliveries = await request(app).get(o.path(`/${id}/deliveries`)).set(bearer(o.token));
    expect(deliveries.body.data.data[0]).toMatchObject({ status: 'succeeded', attempt_count: 1, event_id: payload.id, event_type: 'invoice.created', next_attempt_at: null });
    expect(deliveries.body.data.data[0].attempts[0]).toMatchObject({ http_status: 200, error: null });
  });

  it('a receiver that fails twice gets the event on the third attempt, with the same webhook-id', async () => {
    const hook = await receiver();
    hook.script.push({ status: 500 }, { status: 503, headers: { 'Retry-After': '0' } });
    const o = await organisation();
    const { id, secret } = await createEndpoint(o, hook.url);
    await invoiceCreated(o);
    for (let round = 0; round < 3; round += 1) expect(await deliverDue(id)).toBe(1);
    expect(await deliverDue(id)).toBe(0);
    expect(hook.requests).toHaveLength(3);
    expect(new Set(hook.requests.map((r) => r.headers['webhook-id'])).size).toBe(1);
    for (const delivered of hook.requests) expect(() => verify(secret, delivered)).not.toThrow();
    const res = await request(app).get(o.path(`/${id}/deliveries`)).set(bearer(o.token));
    const [delivery] = res.body.data.data;
    expect(delivery).toMatchObject({ status: 'succeeded', attempt_count: 3 });
    expect(delivery.attempts.map((a: { http_status: number }) => a.http_status)).toEqual([500, 503, 200]);
    const endpoint = await request(app).get(o.path(`/${id}`)).set(bearer(o.token));
    expect(endpoint.body.data.status).toBe('enabled');
  });

  it('after the last scheduled retry the delivery is exhausted', async () => {
    const hook = await receiver();
    hook.script.push({ status: 500 }, { status: 500 }, { status: 500 });
    const o = await organisation();
    const { id } = await createEndpoint(o, hook.url);
    await invoiceCreated(o);
    for (let round = 0; round < 3; round += 1) await deliverDue(id);
    expect(await deliverDue(id)).toBe(0);
    const res = await request(app).get(o.path(`/${id}/deliveries`)).query({ status: 'exhausted' }).set(bearer(o.token));
    expect(res.body.data.data).toHaveLength(1);
    expect(res.body.data.data[0]).toMatchObject({ attempt_count: 3, next_attempt_at: null });
  });

  it('a 410 disables the endpoint at once, and the organisation’s other endpoints hear webhook_endpoint.disabled', async () => {
    const gone = await receiver();
    gone.script.push({ status: 410 });
    const watcher = await receiver();
    const o = await organisation();
    const goneEndpoint = await createEndpoint(o, gone.url, ['invoice.*']);
    const watch = await createEndpoint(o, watcher.url, ['webhook_endpoint.*']);
    await invoiceCreated(o);
    await deliverDue(goneEndpoint.id);
    const endpoint = await request(app).get(o.path(`/${goneEndpoint.id}`)).set(bearer(o.token));
    expect(endpoint.body.data).toMatchObject({ status: 'disabled', disabled_reason: 'gone' });
    await deliverDue(watch.id);
    expect(watcher.requests).toHaveLength(1);
    const payload = verify(watch.secret, watcher.requests[0] as { headers: http.IncomingHttpHeaders; body: string }) as { type: string; data: { object: { id: string; status: string }; previous_status: string } };
    expect(payload.type).toBe('webhook_endpoint.disabled');
    expect(payload.data.object).toMatchObject({ id: goneEndpoint.id, status: 'disabled', disabled_reason: 'gone' });
    expect(payload.data.previous_status).toBe('enabled');
    // Nothing more goes to the disabled endpoint.
    await invoiceCreated(o);
    expect(await deliverDue(goneEndpoint.id)).toBe(0);
  });

  it('a slow receiver times out (WEBHOOK_TIMEOUT_MS) and the event is delivered on the retry', async () => {
    const hook = await receiver();
    hook.script.push({ status: 200, delayMs: 5_000 });
    const o = await organisation();
    const { id } = await createEndpoint(o, hook.url);
    await invoiceCreated(o);
    await deliverDue(id);
    const first = await request(app).get(o.path(`/${id}/deliveries`)).set(bearer(o.token));
    expect(first.body.data.data[0]).toMatchObject({ status: 'failed', attempt_count: 1 });
    expect(first.body.data.data[0].attempts[0]).toMatchObject({ http_status: null, error: 'timeout after 500 ms' });
    await deliverDue(id);
    const second = await request(app).get(o.path(`/${id}/deliveries`)).set(bearer(o.token));
    expect(second.body.data.data[0]).toMatchObject({ status: 'succeeded', attempt_count: 2 });
  });

  it('a redirect is not followed and counts as a failure', async () => {
    const hook = await receiver();
    const target = await receiver();
    hook.script.push({ status: 307, headers: { Location: target.url } });
    const o = await organisation();
    const { id } = await createEndpoint(o, hook.url);
    await invoiceCreated(o);
    await deliverDue(id);
    expect(target.requests).toHaveLength(0);
    const res = await request(app).get(o.path(`/${id}/deliveries`)).set(bearer(o.token));
    expect(res.body.data.data[0].attempts[0]).toMatchObject({ http_status: 307, error: 'HTTP 307: redirects are not followed' });
  });

  it('an event whose transaction rolls back is never delivered', async () => {
    const hook = await receiver();
    const o = await organisation();
    const { id } = await createEndpoint(o, hook.url);
    await expect(
      withTransaction(testKnex(), async (trx) => {
        await new EventRepository(trx).record({ subjectType: 'invoice', subjectId: crypto.randomUUID(), type: 'invoice.paid', actorUserId: null, occurredAt: clock, organizationId: o.org.id, object: { id: 'x' } });
        throw new Error('the change fails after its event');
      }),
    ).rejects.toThrow('the change fails');
    expect(await testKnex()('webhook_deliveries').where({ endpoint_id: id })).toEqual([]);
    expect(await deliverDue(id)).toBe(0);
    expect(hook.requests).toEqual([]);
  });

  it('an endpoint whose deliveries all failed for WEBHOOK_DISABLE_AFTER_HOURS is disabled', async () => {
    const hook = await receiver();
    hook.script.push({ status: 500 }, { status: 500 });
    const o = await organisation();
    const { id } = await createEndpoint(o, hook.url);
    await invoiceCreated(o);
    await deliverDue(id);
    const saved = clock;
    try {
      clock = new Date(saved.getTime() + 121 * 3_600_000);
      await deliverDue(id);
    } finally {
      clock = saved;
    }
    const endpoint = await request(app).get(o.path(`/${id}`)).set(bearer(o.token));
    expect(endpoint.body.data).toMatchObject({ status: 'disabled', disabled_reason: 'failing' });
  });
});

describe('SSRF at delivery time (production settings, a real receiver on loopback)', () => {
  it('never connects to a host that resolves to a private address when the delivery is made (DNS rebinding)', async () => {
    const hook = await receiver();
    const port = new URL(hook.url).port;
    let answers = [['93.184.216.34']];
    const lookupAll = async () => (answers.shift() ?? ['127.0.0.1']).map((address) => ({ address, family: 4 }));
    const strict = new WebhookService({
      knex: testKnex(),
      options: { timeoutMs: 2_000, retryDelaysSeconds: [0, 60], disableAfterHours: 120, allowPrivateTargets: false },
      clock: () => clock,
      lookupAll,
    });
    const org = await createOrganization();
    // Saved while the name resolved to a public address (the check at creation passes)...
    const endpoint = await strict.create(testKnex(), org.id, { url: `https://rebind.example:${port}/hook`, events: ['*'] });
    // ...then the name resolves to loopback, where the receiver listens.
    answers = [];
    const test = await strict.test(org.id, endpoint.id);
    expect(test.status).toBe('failed');
    expect(test.attempts[0]).toMatchObject({ http_status: null, error: 'url refused: private_address' });
    expect(hook.requests).toEqual([]);
  });
});

describe('rotation, test event, retry', () => {
  it('during a rotation each delivery carries both signatures; after it only the new secret verifies', async () => {
    const hook = await receiver();
    const o = await organisation();
    const { id, secret: oldSecret } = await createEndpoint(o, hook.url);
    const rotated = await request(app).post(o.path(`/${id}/rotate-secret`)).set(bearer(o.token)).send({ expire_current_in_seconds: 3600 });
    expect(rotated.status).toBe(200);
    const newSecret = rotated.body.data.secret as string;
    expect(newSecret).not.toBe(oldSecret);
    expect(rotated.body.data.previous_secret_expires_at).not.toBeNull();
    await invoiceCreated(o);
    await deliverDue(id);
    const during = hook.requests[0] as { headers: http.IncomingHttpHeaders; body: string };
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(() => verify(oldSecret, during)).not.toThrow();
    expect(() => verify(newSecret, during)).not.toThrow();
    const ended = await request(app).post(o.path(`/${id}/rotate-secret`)).set(bearer(o.token)).send({ expire_current_in_seconds: 0 });
    const latest = ended.body.data.secret as string;
    await invoiceCreated(o);
    await deliverDue(id);
    const after = hook.requests[1] as { headers: http.IncomingHttpHeaders; body: string };
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(() => verify(latest, after)).not.toThrow();
    expect(() => verify(newSecret, after)).toThrow();
    expect(() => verify(oldSecret, after)).toThrow();
  });

  it('refuses a rotation period beyond 7 days', async () => {
    const o = await organisation();
    const { id } = await createEndpoint(o, 'https://hooks.example.com/r');
    const res = await request(app).post(o.path(`/${id}/rotate-secret`)).set(bearer(o.token)).send({ expire_current_in_seconds: 604_801 });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('ValidationError');
  });

  it('test sends webhook_endpoint.test to this endpoint only and answers 202; retry sends a delivery again with the same id', async () => {
    const hook = await receiver();
    const other = await receiver();
    const o = await organisation();
    const { id, secret } = await createEndpoint(o, hook.url, ['invoice.paid']);
    await createEndpoint(o, other.url, ['*']);
    const tested = await request(app).post(o.path(`/${id}/test`)).set(bearer(o.token));
    expect(tested.status).toBe(202);
    expect(tested.body.data).toMatchObject({ status: 'succeeded', event_type: 'webhook_endpoint.test', attempt_count: 1 });
    const payload = verify(secret, hook.requests[0] as { headers: http.IncomingHttpHeaders; body: string }) as { type: string; data: { object: { id: string } } };
    expect(payload.type).toBe('webhook_endpoint.test');
    expect(payload.data.object.id).toBe(id);
    expect(other.requests).toHaveLength(0);
    const retried = await request(app).post(o.path(`/${id}/deliveries/${tested.body.data.id}/retry`)).set(bearer(o.token));
    expect(retried.status).toBe(202);
    expect(retried.body.data).toMatchObject({ id: tested.body.data.id, attempt_count: 2, status: 'succeeded' });
    expect(hook.requests[1]?.headers['webhook-id']).toBe(hook.requests[0]?.headers['webhook-id']);
  });

  it('the dispatcher does not send a test event again while its first attempt is under way', async () => {
    const hook = await receiver();
    hook.script.push({ status: 200, delayMs: 300 });
    const o = await organisation();
    const { id } = await createEndpoint(o, hook.url, ['invoice.paid']);
    const tested = request(app).post(o.path(`/${id}/test`)).set(bearer(o.token)).then((res) => res);
    await until(() => hook.requests.length > 0);
    // The first attempt is waiting for its answer: a dispatcher run now must not claim it.
    await app.services.webhooks.runDue();
    expect(hook.requests).toHaveLength(1);
    const res = await tested;
    expect(res.body.data).toMatchObject({ status: 'succeeded', attempt_count: 1, next_attempt_at: null });
    expect(await deliverDue(id)).toBe(0);
    expect(hook.requests).toHaveLength(1);
  });

  it('a manual retry of a failed delivery is not sent a second time by the dispatcher meanwhile', async () => {
    const hook = await receiver();
    hook.script.push({ status: 500 }, { status: 200, delayMs: 300 });
    const o = await organisation();
    const { id } = await createEndpoint(o, hook.url);
    await invoiceCreated(o);
    await deliverDue(id);
    const [delivery] = (await testKnex()('webhook_deliveries').where({ endpoint_id: id })) as { id: string; status: string }[];
    expect(delivery?.status).toBe('failed');
    const retried = request(app).post(o.path(`/${id}/deliveries/${delivery?.id}/retry`)).set(bearer(o.token)).then((res) => res);
    await until(() => hook.requests.length >= 2);
    await app.services.webhooks.runDue();
    expect(hook.requests).toHaveLength(2);
    expect((await retried).body.data).toMatchObject({ status: 'succeeded', attempt_count: 2 });
    expect(hook.requests).toHaveLength(2);
  });

  it('the deliveries list pages with starting_after and refuses a foreign cursor and a bad status', async () => {
    const hook = await receiver();
    const o = await organisation();
    const { id } = await createEndpoint(o, hook.url);
    await invoiceCreated(o);
    await invoiceCreated(o);
    const page = await request(app).get(o.path(`/${id}/deliveries`)).query({ limit: 1 }).set(bearer(o.token));
    expect(page.body.data).toMatchObject({ has_more: true });
    const next = await request(app).get(o.path(`/${id}/deliveries`)).query({ limit: 1, starting_after: page.body.data.next_cursor }).set(bearer(o.token));
    expect(next.body.data.data).toHaveLength(1);
    expect(next.body.data.data[0].id).not.toBe(page.body.data.data[0].id);
    const foreign = await request(app).get(o.path(`/${id}/deliveries`)).query({ starting_after: crypto.randomUUID() }).set(bearer(o.token));
    expect(foreign.status).toBe(400);
    const badStatus = await request(app).get(o.path(`/${id}/deliveries`)).query({ status: 'lost' }).set(bearer(o.token));
    expect(badStatus.status).toBe(400);
    expect(badStatus.body.error).toBe('ValidationError');
  });
});
