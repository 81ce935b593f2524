import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import type { Store } from 'express-rate-limit';
import pino from 'pino';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { NotFoundError, RateLimitedError, UnavailableError } from '../../src/errors';
import { errorHandler, notFoundHandler } from '../../src/http/error-handler';
import { apiRateLimiter, healthRateLimiter, loginRateLimiter, memoryRateLimitBackend, type RateLimitBackend } from '../../src/http/rate-limit';
import { buildTestApp, testConfig } from '../support/app';

/** A backend whose stores all fail, like Redis being down. */
function brokenBackend(): RateLimitBackend {
  const fail = (): never => {
    throw new Error('store unavailable (simulated)');
  };
  return {
    kind: 'redis',
    createStore: (): Store => ({ prefix: undefined, localKeys: false, increment: fail, decrement: fail, resetKey: fail }) as unknown as Store,
  };
}

/**
 * `middleware` in front of a route that answers 204, then the app's one error handler, which
 * notes every error it is handed: what reaches the client as an error came through it.
 */
function behind(middleware: RequestHandler) {
  const handed: unknown[] = [];
  const theErrorHandler = errorHandler(pino({ level: 'silent' }));
  const noting: ErrorRequestHandler = (err, req, res, next) => {
    handed.push(err);
    theErrorHandler(err, req, res, next);
  };
  const app = express();
  app.use(middleware);
  app.post('/login', (_req, res) => void res.status(204).end());
  app.get('/anything', (_req, res) => void res.status(204).end());
  app.use(notFoundHandler());
  app.use(noting);
  return { app, handed };
}

const limits = (overrides: Partial<ReturnType<typeof testConfig>['rateLimit']>) => ({ ...testConfig().rateLimit, ...overrides });

describe('the rate limiters refuse through the one error handler', () => {
  it('a 429 is a RateLimitedError the error handler writes, under the limiter RateLimit and Retry-After headers', async () => {
    const { app, handed } = behind(apiRateLimiter(memoryRateLimitBackend(), limits({ anonymousPerWindow: 1 })));
    expect((await request(app).get('/anything')).status).toBe(204);
    const limited = await request(app).get('/anything');
    expect(handed).toHaveLength(1);
    expect(handed[0]).toBeInstanceOf(RateLimitedError);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ success: false, error: 'RateLimitExceeded', message: 'Too many requests: wait for the time in Retry-After, then retry.' });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers['ratelimit']).toMatch(/^"api"; r=0; t=\d+$/);
    expect(limited.headers['ratelimit-policy']).toMatch(/^"api"; q=1; w=\d+/);
  });

  it('the health limiter 429 goes the same way, with its own headers', async () => {
    const { app, handed } = behind(healthRateLimiter(limits({ healthPerWindow: 1 })));
    expect((await request(app).get('/anything')).status).toBe(204);
    const limited = await request(app).get('/anything');
    expect(handed).toEqual([expect.any(RateLimitedError)]);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ success: false, error: 'RateLimitExceeded', message: 'Too many health requests: wait for the time in Retry-After, then retry.' });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers['ratelimit']).toMatch(/^"health"; r=0; t=\d+$/);
  });

  it('a fail-closed limiter whose store cannot count hands the error handler an UnavailableError: 503 with Retry-After 30', async () => {
    const { app, handed } = behind(loginRateLimiter(brokenBackend(), limits({})));
    const refused = await request(app).post('/login').send({ identifier: 'someone@example.com' });
    expect(handed).toEqual([expect.any(UnavailableError)]);
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({ success: false, error: 'ServiceUnavailable', message: 'Login is temporarily unavailable. Retry after the time in Retry-After.' });
    expect(refused.headers['retry-after']).toBe('30');
  });

  it('a fail-closed limiter over its budget hands on its RateLimitedError, not a 503', async () => {
    const { app, handed } = behind(loginRateLimiter(memoryRateLimitBackend(), limits({ loginPerWindow: 1 })));
    const send = () => request(app).post('/login').send({ identifier: 'someone@example.com' });
    expect((await send()).status).toBe(204);
    const limited = await send();
    expect(handed).toEqual([expect.any(RateLimitedError)]);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ success: false, error: 'RateLimitExceeded', message: 'Too many login attempts: wait for the time in Retry-After, then retry.' });
  });

  it('an unknown path is a NotFoundError the error handler writes', async () => {
    const { app, handed } = behind((_req, _res, next) => next());
    const missing = await request(app).get('/nowhere');
    expect(handed).toEqual([expect.any(NotFoundError)]);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ success: false, error: 'NotFound', message: 'The requested resource does not exist.' });
  });

  it('in the app, a 429 carries the request id and nothing but the error envelope', async () => {
    const app = await buildTestApp({ env: { RATE_LIMIT_ANONYMOUS: '1' } });
    const refresh = () => request(app).post('/api/auth/refresh').set('X-Request-Id', 'limited-request-0001').send({ refresh_token: 'rt_not-a-real-token-0123456789' });
    expect((await refresh()).status).toBe(401);
    const limited = await refresh();
    expect(limited.status).toBe(429);
    expect(limited.headers['x-request-id']).toBe('limited-request-0001');
    expect(limited.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(limited.body).toEqual({ success: false, error: 'RateLimitExceeded', message: 'Too many requests: wait for the time in Retry-After, then retry.' });
  });
});
