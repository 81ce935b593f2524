import type { Redis } from 'ioredis';
import pino from 'pino';
import request from 'supertest';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { redisRateLimitBackend } from '../../src/http/rate-limit';
import { connectRedis } from '../../src/http/redis';
import { buildTestApp, type App } from '../support/app';
import { accessTokenFor, bearer, createUser, type TestUser } from '../support/factories';
import { freePort, redisServerInstalled, ThrowawayRedis } from '../support/redis-server';

const LOGIN_LIMIT = 3;
let redisServer: ThrowawayRedis;
let redis: Redis;

beforeEach(async () => {
  // express-rate-limit reports each store failure on the console.
  vi.spyOn(console, 'error').mockImplementation(() => undefined);
  redisServer = new ThrowawayRedis(await freePort());
});

afterEach(async () => {
  redis?.disconnect();
  await redisServer.stop();
  vi.restoreAllMocks();
});

afterAll(async () => {
  await redisServer?.stop();
});

async function appOn(url: string): Promise<App> {
  redis = await connectRedis(url, pino({ level: 'silent' }));
  return buildTestApp({ env: { RATE_LIMIT_LOGIN: String(LOGIN_LIMIT) }, rateLimitBackend: redisRateLimitBackend(redis) });
}

const logIn = (app: App, user: TestUser) => request(app).post('/api/auth/login').send({ identifier: user.email, password: user.password });

/** What an outage must look like: login fails closed (503), everything else goes on (no 500). */
async function expectOutageBehaviour(app: App, user: TestUser, token: string): Promise<void> {
  const login = await logIn(app, user);
  expect(login.status).toBe(503);
  expect(login.body).toMatchObject({ success: false, error: 'ServiceUnavailable' });
  expect(Number(login.headers['retry-after'])).toBeGreaterThan(0);
  const me = await request(app).get('/api/me').set(bearer(token));
  expect(me.status).toBe(200);
  expect(me.headers.ratelimit).toBeUndefined(); // let through uncounted
}

/** Retries until the login limiter counts again (the client reconnects with a back-off of up to 2 s). */
async function expectRecovery(app: App, user: TestUser): Promise<void> {
  const deadline = Date.now() + 15_000;
  let login = await logIn(app, user);
  while (login.status === 503 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    login = await logIn(app, user);
  }
  expect(login.status).toBe(200);
  expect(login.headers.ratelimit).toMatch(/"login"; r=\d+; t=\d+/);
  // The counter really works again: the limit is reached and enforced.
  let last = login;
  for (let i = 0; i < LOGIN_LIMIT; i += 1) last = await logIn(app, user);
  expect(last.status).toBe(429);
  expect(last.body.error).toBe('RateLimitExceeded');
}

// Needs a redis-server binary to play the outage (CI has one; a fresh machine may not).
describe.runIf(redisServerInstalled)('rate limits on Redis through an outage', () => {
  it('Redis down at start: no crash, login 503 and other routes pass; once Redis is up the limiters count again', async () => {
    const app = await appOn(redisServer.url); // nothing listens there yet
    const user = await createUser();
    const token = await accessTokenFor(app, user);
    await expectOutageBehaviour(app, user, token);
    await expectOutageBehaviour(app, user, token);

    await redisServer.start();
    await expectRecovery(app, user);
    // The API limiter's store reconnects on its own schedule (as the login limiter's above):
    // it fails open meanwhile, then counts again and says so in its headers.
    let me = await request(app).get('/api/me').set(bearer(token));
    for (let attempt = 0; attempt < 25 && me.headers.ratelimit === undefined; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      me = await request(app).get('/api/me').set(bearer(token));
    }
    expect(me.status).toBe(200);
    expect(me.headers.ratelimit).toMatch(/"api"; r=\d+; t=\d+/);
  });

  it('Redis goes away and comes back empty (scripts forgotten): 503 for login meanwhile, then it recovers', async () => {
    await redisServer.start();
    const app = await appOn(redisServer.url);
    const user = await createUser();
    const token = await accessTokenFor(app, user);
    const before = await logIn(app, user);
    expect(before.status).toBe(200);
    expect(before.headers.ratelimit).toMatch(/"login"; r=\d+; t=\d+/);

    await redisServer.stop();
    await expectOutageBehaviour(app, user, token);

    await redisServer.start();
    await expectRecovery(app, user);
  });
});
