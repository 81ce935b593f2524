import pino from 'pino';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { createKnex } from '../../src/db/database';
import { memoryRateLimitBackend } from '../../src/http/rate-limit';
import { connectRedis } from '../../src/http/redis';
import { buildTestApp, testConfig, composeTestApp, type App } from '../support/app';
import { expectResponseMatchesContract } from '../support/contract-response';
import { testKnex } from '../support/database';
import { freePort } from '../support/redis-server';

function expectErrorEnvelope(body: unknown, error: string): void {
  expect(body).toMatchObject({ success: false, error });
  expect(typeof (body as { message: unknown }).message).toBe('string');
  expect(JSON.stringify(body)).not.toMatch(/at .*\.(ts|js):\d+/); // no stack trace
}

describe('foundation: health, contract, error envelope', () => {
  let app: App;
  /** When the app was built: no health probe of it started earlier. */
  let builtAt: number;
  beforeAll(async () => {
    builtAt = performance.now();
    app = await buildTestApp();
  });

  it('GET /api/health reports the database and cache', async () => {
    const res = await request(app).get('/api/health');
    const elapsedMs = performance.now() - builtAt;
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.data).toMatchObject({ status: 'ok', version: '1.0.0', database: { status: 'up' } });
    // A measured round trip (probes are shared for a second, so it may be an earlier request's, never one older than the app).
    expect(res.body.data.database.latency_ms).toBeGreaterThanOrEqual(0);
    expect(res.body.data.database.latency_ms).toBeLessThanOrEqual(Math.ceil(elapsedMs));
    expect(['redis', 'memory']).toContain(res.body.data.cache.kind);
    expect(res.body.data.cache.kind).toBe(process.env.REDIS_URL ? 'redis' : 'memory');
    expect(Number.isInteger(res.body.data.uptime_s)).toBe(true);
  });

  it('GET /api/health answers 503 with the same shape when the database does not answer', async () => {
    const deadKnex = createKnex('postgres://postgres@127.0.0.1:1/none', 'postgres', 1);
    const config = testConfig();
    const broken = composeTestApp({ config, knex: deadKnex, logger: pino({ level: 'silent' }), rateLimitBackend: memoryRateLimitBackend() });
    const res = await request(broken).get('/api/health');
    await deadKnex.destroy();
    expect(res.status).toBe(503);
    expect(res.body.success).toBe(false);
    expect(res.body.data).toMatchObject({ status: 'degraded', database: { status: 'down', latency_ms: null } });
    expect(res.body.message).toBe('The database does not answer.');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(await expectResponseMatchesContract('get', '/health', res)).toContain('Retry-After');
  });

  it('GET /api/health stays 200 "degraded" when Redis is unreachable (login fails closed, the rest works)', async () => {
    const port = await freePort();
    const redis = await connectRedis(`redis://127.0.0.1:${port}`, pino({ level: 'silent' }));
    try {
      const config = testConfig();
      const withoutCache = composeTestApp({ config, knex: testKnex(), logger: pino({ level: 'silent' }), rateLimitBackend: memoryRateLimitBackend(), redis });
      const res = await request(withoutCache).get('/api/health');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ success: true, message: 'The cache does not answer.' });
      expect(res.body.data).toMatchObject({ status: 'degraded', database: { status: 'up' }, cache: { status: 'down', kind: 'redis', latency_ms: null } });
      expect(res.headers['retry-after']).toBeUndefined();
      await expectResponseMatchesContract('get', '/health', res);
    } finally {
      redis.disconnect();
    }
  });

  it('GET /api/health answers as the contract says when all is up', async () => {
    const res = await request(app).get('/api/health');
    expect(res.status).toBe(200);
    expect(res.body.message).toBeUndefined();
    await expectResponseMatchesContract('get', '/health', res);
  });

  it('generates an X-Request-Id, and accepts a sane one from the caller', async () => {
    const generated = await request(app).get('/api/health');
    expect(generated.headers['x-request-id']).toMatch(/^req_[0-9a-f-]{36}$/);
    const supplied = await request(app).get('/api/health').set('X-Request-Id', 'client-req-0001');
    expect(supplied.headers['x-request-id']).toBe('client-req-0001');
    const hostile = await request(app).get('/api/health').set('X-Request-Id', 'bad id <script>alert(1)</script>');
    expect(hostile.headers['x-request-id']).not.toContain('script');
  });

  it('refuses a caller X-Request-Id that is too long, too short, or in the form of the ids the service makes', async () => {
    for (const supplied of ['x'.repeat(65), 'short', 'req_6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b', 'seed_demo_1', '-leading-dash', 'abc def ghi']) {
      const res = await request(app).get('/api/health').set('X-Request-Id', supplied);
      expect(res.headers['x-request-id'], supplied).not.toBe(supplied);
      expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-f-]{36}$/);
    }
    const longest = 'a'.repeat(64);
    expect((await request(app).get('/api/health').set('X-Request-Id', longest)).headers['x-request-id']).toBe(longest);
  });

  it('sends the IETF rate-limit headers on API routes', async () => {
    const res = await request(app).post('/api/auth/refresh').send({ refresh_token: 'rt_not-a-real-token' });
    expect(res.status).toBe(401);
    expect(res.headers['ratelimit']).toMatch(/r=\d+/);
    expect(res.headers['ratelimit-policy']).toMatch(/q=\d+/);
  });

  it('serves the bundled contract as JSON and YAML, and an offline reference page', async () => {
    const json = await request(app).get('/api/openapi.json');
    expect(json.status).toBe(200);
    expect(json.body.openapi).toBe('3.1.0');
    expect(json.body.info.version).toBe('1.0.0');
    const yaml = await request(app).get('/api/openapi.yaml');
    expect(yaml.status).toBe(200);
    expect(yaml.headers['content-type']).toMatch(/yaml/);
    expect(yaml.text).toContain('openapi: 3.1.0');
    const docs = await request(app).get('/api/docs');
    expect(docs.status).toBe(200);
    expect(docs.text).not.toMatch(/https?:\/\/(cdn|unpkg|cdnjs)/);
    const assets = [...docs.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
    expect(assets.length).toBeGreaterThanOrEqual(2);
    for (const asset of assets) {
      expect(asset.startsWith('/api/docs/')).toBe(true);
      const res = await request(app).get(asset);
      expect(res.status, asset).toBe(200);
    }
    const withSlash = await request(app).get('/api/docs/');
    expect(withSlash.status).toBe(301);
    expect(withSlash.headers['location']).toBe('/api/docs');
  });

  it('unknown paths answer 404 NotFound in the envelope, inside and outside /api', async () => {
    for (const path of ['/api/nope', '/nope', '/api/business']) {
      const res = await request(app).get(path);
      expect(res.status, path).toBe(404);
      expect(res.headers['content-type']).toMatch(/application\/json/);
      expectErrorEnvelope(res.body, 'NotFound');
    }
  });

  it('a wrong method answers 405 with Allow', async () => {
    const res = await request(app).delete('/api/health');
    expect(res.status).toBe(405);
    expect(res.headers['allow']).toMatch(/GET/i);
    expectErrorEnvelope(res.body, 'MethodNotAllowed');
  });

  it('malformed JSON answers 400 ValidationError', async () => {
    const res = await request(app).post('/api/auth/login').set('Content-Type', 'application/json').send('{"identifier": ');
    expect(res.status).toBe(400);
    expectErrorEnvelope(res.body, 'ValidationError');
  });

  it('a wrong content type answers 415', async () => {
    const res = await request(app).post('/api/auth/login').set('Content-Type', 'text/plain').send('identifier=a&password=b');
    expect(res.status).toBe(415);
    expectErrorEnvelope(res.body, 'UnsupportedMediaType');
  });

  it('a body over the limit answers 413 PayloadTooLarge', async () => {
    const res = await request(app)
      .post('/api/auth/login')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ identifier: 'a@b.example', password: 'x'.repeat(200_000) }));
    expect(res.status).toBe(413);
    expectErrorEnvelope(res.body, 'PayloadTooLarge');
  });

  it('a request that breaks the contract names each bad field', async () => {
    const res = await request(app).post('/api/auth/login').send({ identifier: 'a@b.example', extra: true });
    expect(res.status).toBe(400);
    expectErrorEnvelope(res.body, 'ValidationError');
    const fields = (res.body.details as Array<{ field: string }>).map((d) => d.field);
    expect(fields.some((f) => f.includes('password'))).toBe(true);
  });

  it('a protected route without a token answers 401 with WWW-Authenticate', async () => {
    const res = await request(app).get('/api/escrows');
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    expectErrorEnvelope(res.body, 'Unauthorized');
  });

  it('anonymous requests are rate limited per IP: 429 RateLimitExceeded with Retry-After; health has a budget of its own', async () => {
    const limited = await buildTestApp({ env: { RATE_LIMIT_ANONYMOUS: '3' } });
    const refresh = () => request(limited).post('/api/auth/refresh').send({ refresh_token: 'rt_not-a-real-token' });
    for (let i = 0; i < 3; i += 1) expect((await refresh()).status).toBe(401);
    const res = await refresh();
    expect(res.status).toBe(429);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expectErrorEnvelope(res.body, 'RateLimitExceeded');
    // Load balancers keep seeing the truth about the instance: the API budget is not health's.
    for (let i = 0; i < 5; i += 1) {
      const health = await request(limited).get('/api/health');
      expect(health.status).toBe(200);
      expect(health.headers['ratelimit-policy']).toMatch(/^"health"; q=1200; w=60/);
    }
  });

  it('GET /api/health answers its documented 429 past its own per-IP budget', async () => {
    const limited = await buildTestApp({ env: { RATE_LIMIT_HEALTH: '4' } });
    for (let i = 0; i < 4; i += 1) {
      const ok = await request(limited).get('/api/health');
      expect(ok.status).toBe(200);
      if (i === 0) expect(await expectResponseMatchesContract('get', '/health', ok)).toEqual(expect.arrayContaining(['RateLimit', 'RateLimit-Policy']));
    }
    const refused = await request(limited).get('/api/health');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expectErrorEnvelope(refused.body, 'RateLimitExceeded');
    await expectResponseMatchesContract('get', '/health', refused);
    // Other routes keep their own budget.
    expect((await request(limited).get('/api/openapi.json')).status).toBe(200);
  });
});

describe('request bodies are validated without type coercion', () => {
  it('refuses a boolean or a numeric string where the contract wants a string or a number', async () => {
    const app = await buildTestApp();
    const asBoolean = await request(app).post('/api/auth/login').send({ identifier: true, password: 'x' });
    expect(asBoolean.status).toBe(400);
    expect((asBoolean.body.details as Array<{ field: string }>)[0]?.field).toContain('identifier');
    const asNumber = await request(app).post('/api/auth/login').send({ identifier: 'a@b.example', password: 12345 });
    expect(asNumber.status).toBe(400);
    expect((asNumber.body.details as Array<{ field: string }>)[0]?.field).toContain('password');
  });
});
