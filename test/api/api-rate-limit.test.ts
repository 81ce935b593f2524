import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { buildTestApp } from '../support/app';
import { accessTokenFor, bearer, createUser } from '../support/factories';

const LIMIT = 3;

/** `r=` (remaining) of the IETF draft RateLimit header for the general limiter. */
function remaining(header: string | undefined): number {
  const match = /"api"; r=(\d+)/.exec(header ?? '');
  if (!match) throw new Error(`no "api" RateLimit header in ${String(header)}`);
  return Number(match[1]);
}

describe('general rate limit: one bucket per authenticated user', () => {
  it('two users behind one IP do not share a bucket; two sessions of one user do; anonymous calls count per IP apart', async () => {
    // The run's store: Redis when REDIS_URL is set, memory otherwise.
    const app = await buildTestApp({ env: { RATE_LIMIT_AUTHENTICATED: String(LIMIT), RATE_LIMIT_ANONYMOUS: String(LIMIT) } });
    const alice = await createUser();
    const bob = await createUser();
    const [aliceLaptop, alicePhone, bobToken] = await Promise.all([accessTokenFor(app, alice), accessTokenFor(app, alice), accessTokenFor(app, bob)]);
    const me = (token: string) => request(app).get('/api/me').set(bearer(token));

    // Alice spends her bucket over two sessions: the key is the user, not the token.
    const seen: number[] = [];
    for (let i = 0; i < LIMIT; i += 1) {
      const res = await me(i % 2 === 0 ? aliceLaptop : alicePhone);
      expect(res.status).toBe(200);
      seen.push(remaining(res.headers.ratelimit));
    }
    expect(seen).toEqual([LIMIT - 1, LIMIT - 2, 0]);
    const limited = await me(alicePhone);
    expect(limited.status).toBe(429);
    expect(limited.body.error).toBe('RateLimitExceeded');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);

    // Bob, from the same IP, starts with a full bucket of his own.
    const bobFirst = await me(bobToken);
    expect(bobFirst.status).toBe(200);
    expect(remaining(bobFirst.headers.ratelimit)).toBe(LIMIT - 1);
    // And anonymous calls from that IP are counted apart from both users.
    const anonymous = await request(app).post('/api/auth/refresh').send({ refresh_token: 'rt_not-a-real-token-0123456789' });
    expect(anonymous.status).toBe(401);
    expect(remaining(anonymous.headers.ratelimit)).toBe(LIMIT - 1);
    // Alice is still limited.
    expect((await me(aliceLaptop)).status).toBe(429);
  });
});
