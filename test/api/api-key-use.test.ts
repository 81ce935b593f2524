import { Writable } from 'node:stream';
import pino from 'pino';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { memoryRateLimitBackend } from '../../src/http/rate-limit';
import { buildTestApp, testConfig, composeTestApp, type App } from '../support/app';
import { API_KEY_SCOPES, createApiKey } from '../support/api-keys';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, businessPath, createMember, createOrganization } from '../support/factories';

/** API keys in use: rate limits per key, idempotency scoped to the organisation, and keys never in logs. */

describe('rate limits per API key (RATE_LIMIT_API_KEY)', () => {
  it('counts each key on its own, apart from its creator’s own budget', async () => {
    const app = await buildTestApp({ env: { RATE_LIMIT_API_KEY: '3', RATE_LIMIT_AUTHENTICATED: '5' } });
    const org = await createOrganization();
    const creator = await createMember(org, 'owner');
    const first = await createApiKey(app, org, ['payments:read'], { creator });
    const second = await createApiKey(app, org, ['payments:read'], { creator });
    const payments = `${businessPath(org.id)}/payments`;
    for (let i = 0; i < 3; i += 1) {
      const res = await request(app).get(payments).set(first.auth);
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-policy']).toMatch(/^"api"; q=3; w=60/);
    }
    const limited = await request(app).get(payments).set(first.auth);
    expect([limited.status, limited.body.error]).toEqual([429, 'RateLimitExceeded']);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect((await request(app).get(payments).set(second.auth)).status).toBe(200);
    const owner = await accessTokenFor(app, creator);
    const own = await request(app).get(payments).set(bearer(owner));
    expect(own.status).toBe(200);
    expect(own.headers['ratelimit-policy']).toMatch(/^"api"; q=5; w=60/);
  });
});

describe('idempotency with an API key', () => {
  it("a key's Idempotency-Key is scoped to its organisation: another key of it replays, the creator's own key space and another organisation do not", async () => {
    const app = await buildTestApp();
    const org = await createOrganization();
    const creator = await createMember(org, 'owner');
    const one = await createApiKey(app, org, ['invoices:write'], { creator });
    const two = await createApiKey(app, org, ['invoices:write'], { creator });
    const customer = await request(app).post(`${businessPath(org.id)}/customers`).set(one.auth).send({ name: 'Boutique Awa' });
    expect(customer.status, JSON.stringify(customer.body)).toBe(201);
    const body = { kind: 'invoice', customer_id: customer.body.data.id, currency: 'XOF', line_items: [{ description: 'Consulting', quantity: 1, unit_amount: '50000' }] };
    const idempotencyKey = `inv-${Date.now()}`;
    const invoices = `${businessPath(org.id)}/invoices`;
    const created = await request(app).post(invoices).set(one.auth).set('Idempotency-Key', idempotencyKey).send(body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const replay = await request(app).post(invoices).set(two.auth).set('Idempotency-Key', idempotencyKey).send(body);
    expect([replay.status, replay.body.error]).toEqual([409, 'IdempotencyKeyAlreadyProcessed']);
    expect(replay.body.details.resource_id).toBe(created.body.data.id);
    const owner = await accessTokenFor(app, creator);
    const byUser = await request(app).post(invoices).set(bearer(owner)).set('Idempotency-Key', idempotencyKey).send(body);
    expect(byUser.status, JSON.stringify(byUser.body)).toBe(201);
    expect(byUser.body.data.id).not.toBe(created.body.data.id);
    const rows = await testKnex()('idempotency_keys').where({ key: idempotencyKey }).orderBy('created_at');
    expect(rows.map((r) => [r.user_id, r.organization_id])).toEqual([
      [null, org.id],
      [creator.id, null],
    ]);
    const invoicesOfOrg = await testKnex()('documents').where({ organization_id: org.id, kind: 'invoice' });
    expect(invoicesOfOrg).toHaveLength(2);
  });
});

describe('keys never reach a log line', () => {
  let app: App;
  const lines: string[] = [];

  beforeAll(async () => {
    const capture = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    const config = testConfig({ LOG_LEVEL: 'trace' });
    app = composeTestApp({ config, knex: testKnex(), logger: pino({ level: 'trace' }, capture), rateLimitBackend: memoryRateLimitBackend() });
    await app.services.ready();
  });

  it('creating, using, rolling, mistyping and revoking a key leaves neither its secret nor its random part in any line', async () => {
    const org = await createOrganization();
    const owner = await accessTokenFor(app, await createMember(org, 'owner'));
    const keys = `${businessPath(org.id)}/api-keys`;
    const created = await request(app).post(keys).set(bearer(owner)).send({ name: 'Logged server', scopes: API_KEY_SCOPES });
    expect(created.status).toBe(201);
    const secret = created.body.data.secret as string;
    const rolled = await request(app).post(`${keys}/${created.body.data.id}/roll`).set(bearer(owner)).send({});
    const newSecret = rolled.body.data.secret as string;
    const typo = `${secret.slice(0, 30)}${secret[30] === 'A' ? 'B' : 'A'}${secret.slice(31)}`;
    const calls = [
      request(app).get(`${businessPath(org.id)}/payments`).set(bearer(secret)),
      request(app).get(`${businessPath(org.id)}/payments?limit=0`).set(bearer(newSecret)),
      request(app).get(`${businessPath(org.id)}/payments`).set(bearer(typo)),
      request(app).get(`${businessPath(org.id)}/payments/not-a-uuid`).set(bearer(newSecret)),
      request(app).get('/api/me').set(bearer(newSecret)),
      request(app).get(`${businessPath(org.id)}/payments?key=${newSecret}`).set(bearer(newSecret)),
      request(app).post(`${businessPath(org.id)}/customers`).set(bearer(newSecret)).set('Content-Type', 'application/json').send(`{"name": "${newSecret}`),
    ];
    const statuses = [];
    for (const call of calls) statuses.push((await call).status);
    expect(statuses).toEqual([200, 400, 401, 400, 403, 400, 400]);
    expect((await request(app).delete(`${keys}/${created.body.data.id}`).set(bearer(owner))).status).toBe(200);
    expect((await request(app).get(`${businessPath(org.id)}/payments`).set(bearer(newSecret))).status).toBe(401);

    expect(lines.length).toBeGreaterThan(10);
    // The request line of the key sent in a URL is there, with the key cut to its prefix.
    expect(lines.some((line) => line.includes('/payments?key=sk_test_[redacted]'))).toBe(true);
    for (const key of [secret, newSecret, typo]) {
      const randomPart = key.slice(21, 53);
      const offending = lines.filter((line) => line.includes(randomPart) || line.includes(key.slice(21)));
      expect(offending, key.slice(0, 21)).toEqual([]);
    }
  });
});
