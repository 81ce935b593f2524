import type { Store } from 'express-rate-limit';
import request from 'supertest';
import { describe, expect, it, vi } from 'vitest';
import type { RateLimitBackend } from '../../src/http/rate-limit';
import { buildTestApp } from '../support/app';
import { accessTokenFor, bearer, createUser, uniqueEmail, uniquePhone } from '../support/factories';

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

describe('login rate limit (per IP and identifier)', () => {
  it('answers 429 RateLimitExceeded with Retry-After and the IETF RateLimit headers beyond the limit', async () => {
    // The run's store: Redis when REDIS_URL is set, memory otherwise.
    const app = await buildTestApp({ env: { RATE_LIMIT_LOGIN: '3' } });
    const user = await createUser();
    const attempt = (identifier: string, password = 'wrong password') =>
      request(app).post('/api/auth/login').send({ identifier, password });
    for (let i = 0; i < 2; i += 1) {
      const res = await attempt(user.email as string);
      expect(res.status).toBe(401);
      expect(res.headers['ratelimit-policy']).toMatch(/q=3/);
      expect(res.headers['ratelimit']).toMatch(/r=\d+/);
    }
    // The third attempt is the last one allowed: the right password still works.
    expect((await attempt(user.email as string, user.password)).status).toBe(200);
    const limited = await attempt(user.email as string, user.password);
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ success: false, error: 'RateLimitExceeded' });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers['ratelimit']).toMatch(/r=0/);
    expect(limited.headers['ratelimit-policy']).toMatch(/q=3/);
    // Counted per identifier: another account from the same IP is not limited by it.
    expect((await attempt(uniqueEmail('other'))).status).toBe(401);
    // The same identifier in another case is the same bucket.
    expect((await attempt((user.email as string).toUpperCase())).status).toBe(429);
  });

  it('counts every spelling of one telephone number (spaces, dashes, 00 or +) in one bucket', async () => {
    const app = await buildTestApp({ env: { RATE_LIMIT_LOGIN: '2', LOGIN_MAX_FAILED_ATTEMPTS: '100' } });
    const phone = uniquePhone(); // +22507XXXXXXXX
    await createUser({ email: null, phone });
    const spellings = [phone, `00${phone.slice(1)}`, `${phone.slice(0, 4)} ${phone.slice(4)}`, `${phone.slice(0, 6)}-${phone.slice(6, 9)}-${phone.slice(9)}`];
    const statuses: number[] = [];
    for (const identifier of spellings) {
      statuses.push((await request(app).post('/api/auth/login').send({ identifier, password: 'wrong password' })).status);
    }
    expect(statuses).toEqual([401, 401, 429, 429]);
  });

  it('fails closed: 503 ServiceUnavailable with Retry-After when the store errors, while other routes fail open', async () => {
    // express-rate-limit reports a failing store on the console when it lets a request through.
    const consoleError = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const app = await buildTestApp({ rateLimitBackend: brokenBackend() });
    const user = await createUser();
    const login = await request(app).post('/api/auth/login').send({ identifier: user.email, password: user.password });
    expect(login.status).toBe(503);
    expect(login.body).toMatchObject({ success: false, error: 'ServiceUnavailable' });
    expect(Number(login.headers['retry-after'])).toBeGreaterThan(0);
    expect(login.body.data).toBeUndefined();

    const token = await accessTokenFor(app, user);
    const me = await request(app).get('/api/me').set(bearer(token));
    expect(me.status).toBe(200);
    expect((await request(app).get('/api/health')).status).toBe(200);
    expect(consoleError).toHaveBeenCalled(); // the store really failed on those routes
    consoleError.mockRestore();
  });
});
