import type { Knex } from 'knex';
import pino from 'pino';
import request from 'supertest';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createKnex } from '../../src/db/database';
import { memoryRateLimitBackend } from '../../src/http/rate-limit';
import { buildTestApp, testConfig, composeTestApp, type App } from '../support/app';
import { databaseKind, testDatabaseUrl, testKnex } from '../support/database';
import { createUser, uniqueEmail } from '../support/factories';
import { until } from '../support/jobs';

/**
 * The login lockout, counted in the database before each password
 * check, per account and source address, with an account-wide lock that spares known sources,
 * the same answers for unknown identifiers, a per-IP limit and a bound on verifications.
 */
const MAX = 3;
const pools: Knex[] = [];

afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.destroy()));
});

function login(app: App, identifier: string, password: string, from?: string) {
  const req = request(app).post('/api/auth/login');
  if (from) void req.set('X-Forwarded-For', from);
  return req.send({ identifier, password });
}

/** Counts the password verifications (real and dummy) an app runs. */
function countVerifications(app: App): { count: () => number } {
  let count = 0;
  const passwords = app.services.passwords;
  const verify = passwords.verify.bind(passwords);
  vi.spyOn(passwords, 'verify').mockImplementation(async (hash, password) => {
    count += 1;
    return verify(hash, password);
  });
  return { count: () => count };
}

/**
 * `n` apps on one database: on PostgreSQL each with a pool of its own (as separate instances
 * have), on the embedded back-end (one connection) sharing the run's pool.
 */
async function instances(n: number, env: Record<string, string>): Promise<App[]> {
  const apps: App[] = [];
  for (let i = 0; i < n; i += 1) {
    let knex = testKnex();
    if (databaseKind() === 'postgres') {
      knex = createKnex(await testDatabaseUrl(), 'postgres', 4);
      pools.push(knex);
    }
    const config = testConfig(env);
    const app = composeTestApp({ config, knex, logger: pino({ level: 'silent' }), rateLimitBackend: memoryRateLimitBackend() });
    await app.services.ready();
    apps.push(app);
  }
  return apps;
}

describe('failed logins are counted before the password is checked', () => {
  it(`12 concurrent wrong logins for one account over 3 instances verify at most ${MAX} passwords; the rest answer AccountLocked`, async () => {
    const apps = await instances(3, { LOGIN_MAX_FAILED_ATTEMPTS: String(MAX) });
    const counters = apps.map(countVerifications);
    const user = await createUser();
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => login(apps[i % 3] as App, user.email as string, `wrong-${i}`)));
    const verifications = counters.reduce((sum, c) => sum + c.count(), 0);
    const errors = answers.map((res) => res.body.error as string);
    expect(answers.every((res) => res.status === 401)).toBe(true);
    expect(verifications).toBeLessThanOrEqual(MAX);
    expect(errors.filter((e) => e === 'InvalidCredentials').length).toBeLessThanOrEqual(MAX);
    expect(errors.filter((e) => e !== 'InvalidCredentials').every((e) => e === 'AccountLocked')).toBe(true);
    expect(errors.filter((e) => e === 'AccountLocked').length).toBeGreaterThanOrEqual(12 - MAX);
    // And the lock holds: the right password from the same address is refused too.
    const after = await login(apps[0] as App, user.email as string, user.password);
    expect(after.body.error).toBe('AccountLocked');
  });
});

describe('the lock hurts the attacker, not the owner', () => {
  const env = { TRUST_PROXY_HOPS: '1', LOGIN_MAX_FAILED_ATTEMPTS: String(MAX), LOGIN_ACCOUNT_MAX_FAILED_ATTEMPTS: '5' };

  it('failures from one address lock only that address out of the account', async () => {
    const app = await buildTestApp({ env });
    const user = await createUser();
    for (let i = 0; i < MAX; i += 1) await login(app, user.email as string, 'wrong', '203.0.113.7');
    const attacker = await login(app, user.email as string, user.password, '203.0.113.7');
    expect(attacker.body.error).toBe('AccountLocked');
    const owner = await login(app, user.email as string, user.password, '198.51.100.20');
    expect(owner.status).toBe(200);
  });

  it('the account-wide lock (many addresses) stops strangers but not an address the owner logged in from', async () => {
    const app = await buildTestApp({ env });
    const user = await createUser();
    expect((await login(app, user.email as string, user.password, '198.51.100.21')).status).toBe(200);
    // Five strangers, one wrong password each: the account-wide limit (5) is reached.
    const strangers = await Promise.all([1, 2, 3, 4, 5].map((n) => login(app, user.email as string, 'wrong', `203.0.113.${100 + n}`)));
    expect(strangers.map((r) => r.body.error).sort()).toEqual(['AccountLocked', 'InvalidCredentials', 'InvalidCredentials', 'InvalidCredentials', 'InvalidCredentials']);
    // A new address is refused even with the right password...
    const stranger = await login(app, user.email as string, user.password, '203.0.113.200');
    expect(stranger.status).toBe(401);
    expect(stranger.body.error).toBe('AccountLocked');
    expect(Number(stranger.headers['retry-after'])).toBeGreaterThan(0);
    // ...the owner's known address is not.
    const owner = await login(app, user.email as string, user.password, '198.51.100.21');
    expect(owner.status).toBe(200);
  });

  it('an unknown identifier is answered exactly like an account: InvalidCredentials, then AccountLocked with the same Retry-After', async () => {
    const app = await buildTestApp({ env });
    const user = await createUser();
    const nobody = uniqueEmail('nobody');
    const known: request.Response[] = [];
    const unknown: request.Response[] = [];
    for (let i = 0; i <= MAX; i += 1) {
      known.push(await login(app, user.email as string, 'wrong', '192.0.2.9'));
      unknown.push(await login(app, nobody, 'wrong', '192.0.2.9'));
    }
    for (let i = 0; i <= MAX; i += 1) {
      expect(unknown[i]?.status).toBe(known[i]?.status);
      expect(unknown[i]?.body).toEqual(known[i]?.body);
      const [k, u] = [Number(known[i]?.headers['retry-after'] ?? 0), Number(unknown[i]?.headers['retry-after'] ?? 0)];
      expect(Math.abs(k - u)).toBeLessThanOrEqual(2);
    }
    expect(known.map((r) => r.body.error)).toEqual(['InvalidCredentials', 'InvalidCredentials', 'AccountLocked', 'AccountLocked']);
  });

  it('an account an operator locked answers a wrong password like any other (its status is no oracle)', async () => {
    const app = await buildTestApp({ env });
    const user = await createUser({ status: 'locked' });
    const wrong = await login(app, user.email as string, 'wrong', '192.0.2.10');
    expect(wrong.body).toEqual({ success: false, error: 'InvalidCredentials', message: 'Invalid identifier or password.' });
    expect((await login(app, user.email as string, user.password, '192.0.2.11')).body.error).toBe('AccountLocked');
  });
});

describe('password checks reachable anonymously are bounded', () => {
  it('one address trying many identifiers is stopped by the per-IP login limit (429)', async () => {
    const app = await buildTestApp({ env: { RATE_LIMIT_LOGIN_PER_IP: '3' } });
    const answers: number[] = [];
    for (let i = 0; i < 4; i += 1) answers.push((await login(app, uniqueEmail(`spray${i}`), 'guess')).status);
    expect(answers).toEqual([401, 401, 401, 429]);
  });

  it('beyond LOGIN_MAX_CONCURRENT_VERIFICATIONS a login answers 503 ServiceUnavailable with Retry-After at once, and costs no attempt', async () => {
    const app = await buildTestApp({ env: { LOGIN_MAX_CONCURRENT_VERIFICATIONS: '1', LOGIN_MAX_FAILED_ATTEMPTS: '1' } });
    const user = await createUser();
    let releaseFirst!: () => void;
    const held = new Promise<void>((resolve) => (releaseFirst = resolve));
    const passwords = app.services.passwords;
    const verify = passwords.verify.bind(passwords);
    const spy = vi.spyOn(passwords, 'verify').mockImplementationOnce(async (hash, password) => {
      await held;
      return verify(hash, password);
    });
    const first = login(app, user.email as string, user.password).then((res) => res);
    await until(() => spy.mock.calls.length === 1);
    const busy = await login(app, user.email as string, 'wrong');
    expect(busy.status).toBe(503);
    expect(busy.body).toMatchObject({ success: false, error: 'ServiceUnavailable' });
    expect(busy.headers['retry-after']).toBe('1');
    releaseFirst();
    expect((await first).status).toBe(200);
    // The refused login counted nothing: with a limit of one failure, the right password still works.
    expect((await login(app, user.email as string, user.password)).status).toBe(200);
  });
});

describe('the counters do not grow forever', () => {
  it('purgeLoginAttempts deletes rows untouched for longer than a known source is remembered, and keeps the rest', async () => {
    const app = await buildTestApp({ env: { LOGIN_KNOWN_SOURCE_DAYS: '30' } });
    const knex = testKnex();
    const [old, recent] = [`i:purge-old-${Date.now()}`, `i:purge-recent-${Date.now()}`];
    await knex('login_attempts').insert([
      { subject: old, source: '192.0.2.50', failures: 1, updated_at: knex.raw("now() - interval '32 days'") },
      { subject: recent, source: '192.0.2.50', failures: 1, updated_at: knex.raw("now() - interval '29 days'") },
    ]);
    expect(await app.services.auth.purgeLoginAttempts()).toBeGreaterThanOrEqual(1);
    expect(await knex('login_attempts').where({ subject: old }).first()).toBeUndefined();
    expect(await knex('login_attempts').where({ subject: recent }).first()).toBeDefined();
  });
});
