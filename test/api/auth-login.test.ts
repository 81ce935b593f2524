import { hash } from '@node-rs/argon2';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { ARGON2_OPTIONS } from '../../src/modules/auth';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { bearer, createUser, uniqueEmail, uniquePhone } from '../support/factories';

const MAX_ATTEMPTS = 3;
let app: App;

function login(identifier: string, password: string) {
  return request(app).post('/api/auth/login').send({ identifier, password });
}

/** The failure count and lock of this account for the tests' source address (supertest's 127.0.0.1). */
async function userRow(id: string): Promise<{ failed_login_count: number; locked_until: Date | null }> {
  const row = (await testKnex()('login_attempts').where({ subject: `u:${id}`, source: '127.0.0.1' }).first('failures', 'locked_until')) as
    | { failures: number; locked_until: Date | null }
    | undefined;
  return { failed_login_count: row?.failures ?? 0, locked_until: row?.locked_until ?? null };
}

beforeAll(async () => {
  app = await buildTestApp({ env: { LOGIN_MAX_FAILED_ATTEMPTS: String(MAX_ATTEMPTS), LOGIN_LOCK_MINUTES: '15' } });
});

describe('POST /auth/login', () => {
  it('opens a session with an e-mail in any case; the access token works at once', async () => {
    const email = uniqueEmail('Login');
    const user = await createUser({ email });
    const res = await login(email.toUpperCase(), user.password);
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body.success).toBe(true);
    expect(res.body.data).toMatchObject({ token_type: 'Bearer', expires_in: 900, refresh_expires_in: 30 * 86_400 });
    expect(res.body.data.refresh_token).toMatch(/^rt_/);
    const me = await request(app).get('/api/me').set(bearer(res.body.data.access_token));
    expect(me.status).toBe(200);
    expect(me.body.data.id).toBe(user.id);
    const session = await testKnex()('sessions').where({ id: res.body.data.session_id }).first('user_id', 'refresh_token_hash');
    expect(session.user_id).toBe(user.id);
    expect(session.refresh_token_hash).not.toContain(res.body.data.refresh_token);
  });

  it('accepts a telephone number in international form, normalised to E.164', async () => {
    const phone = uniquePhone(); // +22507XXXXXXXX
    const user = await createUser({ email: null, phone });
    const spaced = `00 ${phone.slice(1, 4)} ${phone.slice(4, 6)} ${phone.slice(6, 8)}-${phone.slice(8)}`;
    for (const identifier of [phone, spaced]) {
      const res = await login(identifier, user.password);
      expect(res.status, identifier).toBe(200);
    }
  });

  it('answers an unknown identifier and a wrong password with the same 401 InvalidCredentials', async () => {
    const user = await createUser();
    const wrong = await login(user.email as string, 'not the password');
    const unknown = await login(uniqueEmail('nobody'), 'not the password');
    for (const res of [wrong, unknown]) {
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    }
    expect(wrong.body).toEqual({ success: false, error: 'InvalidCredentials', message: 'Invalid identifier or password.' });
    expect(unknown.body).toEqual(wrong.body);
  });

  it('answers a disabled account like a wrong password, even with the right one', async () => {
    const user = await createUser({ status: 'disabled' });
    const res = await login(user.email as string, user.password);
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('InvalidCredentials');
  });

  it('a lock left in users.locked_until (the lockout lives in login_attempts) never refuses the right password', async () => {
    const user = await createUser();
    await testKnex()('users').where({ id: user.id }).update({ locked_until: testKnex().raw("now() + interval '10 minutes'"), failed_login_count: 0 });
    const res = await login(user.email as string, user.password);
    expect(res.status, res.text).toBe(200);
    expect(await testKnex()('users').where({ id: user.id }).first('locked_until')).toEqual({ locked_until: null });
  });

  it('refuses an identifier that is neither an e-mail nor an international telephone number with 400', async () => {
    for (const identifier of ['just-a-name', '0700000000', '+1', 'a@']) {
      const res = await login(identifier, 'whatever');
      expect(res.status, identifier).toBe(400);
      expect(res.body).toMatchObject({ success: false, error: 'ValidationError', details: [{ field: 'body.identifier' }] });
    }
  });

  it('refuses bodies that do not match the contract (missing password, extra field)', async () => {
    const missing = await request(app).post('/api/auth/login').send({ identifier: 'a@b.example' });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('ValidationError');
    const extra = await request(app).post('/api/auth/login').send({ identifier: 'a@b.example', password: 'x', admin: true });
    expect(extra.status).toBe(400);
  });

  it('stores new passwords as argon2id at the OWASP parameters', async () => {
    const stored = await app.services.passwords.hash('s3cret-Passw0rd');
    expect(stored).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(await app.services.passwords.verify(stored, 's3cret-Passw0rd')).toBe(true);
    expect(await app.services.passwords.verify(stored, 'S3cret-Passw0rd')).toBe(false);
    expect(await app.services.passwords.verify('not a hash', 'x')).toBe(false);
  });
});

describe('lockout', () => {
  it(`locks the account on the ${MAX_ATTEMPTS}th failure for the configured period, even for the right password`, async () => {
    const user = await createUser();
    for (let i = 1; i < MAX_ATTEMPTS; i += 1) {
      const res = await login(user.email as string, `wrong-${i}`);
      expect(res.body.error).toBe('InvalidCredentials');
    }
    expect((await userRow(user.id)).failed_login_count).toBe(MAX_ATTEMPTS - 1);
    const locking = await login(user.email as string, 'wrong-last');
    expect(locking.status).toBe(401);
    expect(locking.body.error).toBe('AccountLocked');
    const retryAfter = Number(locking.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(14 * 60);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);
    const lockedUntil = (await userRow(user.id)).locked_until as Date;
    expect(lockedUntil.getTime() - Date.now()).toBeGreaterThan(14 * 60 * 1000);

    const rightPassword = await login(user.email as string, user.password);
    expect(rightPassword.status).toBe(401);
    expect(rightPassword.body.error).toBe('AccountLocked');
    expect(rightPassword.headers['www-authenticate']).toMatch(/^Bearer/);
  });

  it('unlocks after the period: the right password works again and the count starts over', async () => {
    const user = await createUser();
    for (let i = 0; i < MAX_ATTEMPTS; i += 1) await login(user.email as string, 'wrong');
    expect((await login(user.email as string, user.password)).body.error).toBe('AccountLocked');
    // The lock period elapses.
    await testKnex()('login_attempts').where({ subject: `u:${user.id}` }).whereNotNull('locked_until').update({ locked_until: testKnex().raw("now() - interval '1 second'") });
    const res = await login(user.email as string, user.password);
    expect(res.status).toBe(200);
    expect(await userRow(user.id)).toEqual({ failed_login_count: 0, locked_until: null });
    // A new series of failures is needed to lock again.
    expect((await login(user.email as string, 'wrong')).body.error).toBe('InvalidCredentials');
  });

  it('a successful login resets the failure count', async () => {
    const user = await createUser();
    for (let round = 0; round < 3; round += 1) {
      for (let i = 1; i < MAX_ATTEMPTS; i += 1) expect((await login(user.email as string, 'wrong')).body.error).toBe('InvalidCredentials');
      expect((await login(user.email as string, user.password)).status).toBe(200);
      expect((await userRow(user.id)).failed_login_count).toBe(0);
    }
  });

  it('concurrent failures are all counted (no lost update)', async () => {
    const user = await createUser();
    const results = await Promise.all(Array.from({ length: MAX_ATTEMPTS - 1 }, () => login(user.email as string, 'wrong')));
    expect(results.map((r) => r.body.error)).toEqual(Array(MAX_ATTEMPTS - 1).fill('InvalidCredentials'));
    expect((await userRow(user.id)).failed_login_count).toBe(MAX_ATTEMPTS - 1);
  });

  it('an account locked by an administrator answers AccountLocked', async () => {
    const user = await createUser({ status: 'locked' });
    const res = await login(user.email as string, user.password);
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('AccountLocked');
  });
});

describe('timing', () => {
  it('an unknown identifier takes about as long as a wrong password (medians within 10x)', async () => {
    // A user hashed at the production parameters, as real users are.
    const user = await createUser({ passwordHash: await hash('the real password', ARGON2_OPTIONS) });
    const timed = async (identifier: string): Promise<number> => {
      const started = process.hrtime.bigint();
      const res = await login(identifier, 'a wrong password');
      expect(res.status).toBe(401);
      return Number(process.hrtime.bigint() - started) / 1e6;
    };
    // No warm-up: the dummy hash was made when the services were built, so the very first
    // unknown identifier costs one verification like the others.
    const unknown: number[] = [];
    const wrong: number[] = [];
    for (let i = 0; i < 7; i += 1) {
      unknown.push(await timed(uniqueEmail('nobody')));
      // Keep the account below the lock threshold so every attempt is a real verification.
      if (i % (MAX_ATTEMPTS - 1) === 0) await testKnex()('login_attempts').where({ subject: `u:${user.id}` }).update({ failures: 0 });
      wrong.push(await timed(user.email as string));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    const [u, w] = [median(unknown), median(wrong)];
    console.log(`login timing medians: unknown identifier ${u.toFixed(1)} ms, wrong password ${w.toFixed(1)} ms`);
    expect(Math.max(u, w) / Math.min(u, w)).toBeLessThan(10);
  });
});
