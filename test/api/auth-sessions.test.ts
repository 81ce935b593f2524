import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { bearer, createUser, type TestUser } from '../support/factories';

let app: App;

interface Tokens {
  access_token: string;
  refresh_token: string;
  session_id: string;
}

async function logIn(existing?: TestUser): Promise<Tokens & { userId: string }> {
  const user = existing ?? (await createUser());
  const res = await request(app).post('/api/auth/login').send({ identifier: user.email, password: user.password });
  expect(res.status).toBe(200);
  return { ...(res.body.data as Tokens), userId: user.id };
}

const refresh = (refreshToken: string) => request(app).post('/api/auth/refresh').send({ refresh_token: refreshToken });
const me = (accessToken: string) => request(app).get('/api/me').set(bearer(accessToken));

beforeAll(async () => {
  app = await buildTestApp();
});

describe('POST /auth/refresh', () => {
  it('rotates: a new pair that works, the old access and refresh tokens are spent', async () => {
    const first = await logIn();
    const res = await refresh(first.refresh_token);
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const second = res.body.data as Tokens;
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.session_id).not.toBe(first.session_id);
    expect((await me(second.access_token)).status).toBe(200);
    expect((await me(first.access_token)).status).toBe(401);
    const row = await testKnex()('sessions').where({ id: second.session_id }).first('rotated_from', 'user_id');
    expect(row).toEqual({ rotated_from: first.session_id, user_id: first.userId });
    // The rotated chain keeps going.
    const third = await refresh(second.refresh_token);
    expect(third.status).toBe(200);
    expect((await me(third.body.data.access_token)).status).toBe(200);
  });

  it('reuse of a rotated refresh token revokes the whole chain and answers 401', async () => {
    const first = await logIn();
    const second = (await refresh(first.refresh_token)).body.data as Tokens;
    const third = (await refresh(second.refresh_token)).body.data as Tokens;
    expect((await me(third.access_token)).status).toBe(200);

    const replay = await refresh(first.refresh_token); // the thief (or the victim) replays an old token
    expect(replay.status).toBe(401);
    expect(replay.body).toMatchObject({ success: false, error: 'RefreshTokenReused' });
    expect(replay.headers['www-authenticate']).toMatch(/^Bearer/);

    // Every session of the chain is dead: the live access token and the live refresh token.
    expect((await me(third.access_token)).status).toBe(401);
    const latest = await refresh(third.refresh_token);
    expect(latest.status).toBe(401);
    const reasons = await testKnex()('sessions').whereIn('id', [first.session_id, second.session_id, third.session_id]).pluck('revoked_reason');
    expect(reasons.sort()).toEqual(['reuse_detected', 'rotated', 'rotated']);
  });

  it('reuse does not touch the other sessions of the same user', async () => {
    const user = await createUser();
    const login = async () => (await request(app).post('/api/auth/login').send({ identifier: user.email, password: user.password })).body.data as Tokens;
    const laptop = await login();
    const phone = await login();
    await refresh(laptop.refresh_token);
    expect((await refresh(laptop.refresh_token)).body.error).toBe('RefreshTokenReused');
    expect((await me(phone.access_token)).status).toBe(200);
  });

  it('two concurrent refreshes with one token: one wins, the other is a reuse that revokes the chain', async () => {
    const first = await logIn();
    const results = await Promise.all([refresh(first.refresh_token), refresh(first.refresh_token)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 401]);
    expect(results.find((r) => r.status === 401)?.body.error).toBe('RefreshTokenReused');
    const winner = results.find((r) => r.status === 200)?.body.data as Tokens;
    expect((await me(winner.access_token)).status).toBe(401);
    const live = await testKnex()('sessions').where({ user_id: first.userId }).whereNull('revoked_at').count<{ count: string }[]>('* as count');
    expect(Number(live[0]?.count)).toBe(0);
  });

  it('refuses unknown, expired and logged-out refresh tokens with 401 InvalidRefreshToken', async () => {
    expect((await refresh('rt_this-token-was-never-issued-0123456789')).body.error).toBe('InvalidRefreshToken');
    const expired = await logIn();
    await testKnex()('sessions').where({ id: expired.session_id }).update({ expires_at: testKnex().raw("now() - interval '1 second'") });
    const res = await refresh(expired.refresh_token);
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('InvalidRefreshToken');
    const loggedOut = await logIn();
    await request(app).post('/api/auth/logout').set(bearer(loggedOut.access_token));
    expect((await refresh(loggedOut.refresh_token)).body.error).toBe('InvalidRefreshToken');
  });

  it('refuses a disabled account with the error the login gives it (InvalidCredentials), without rotating', async () => {
    const session = await logIn();
    await testKnex()('users').where({ id: session.userId }).update({ status: 'disabled' });
    const res = await refresh(session.refresh_token);
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ success: false, error: 'InvalidCredentials', message: 'Invalid identifier or password.' });
    expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(res.body.data).toBeUndefined();
    const rows = await testKnex()('sessions').where({ user_id: session.userId }).select('id', 'revoked_at');
    expect(rows).toEqual([{ id: session.session_id, revoked_at: null }]);
  });

  it('refuses an account locked by an operator with AccountLocked, as the login does', async () => {
    const user = await createUser();
    const session = await logIn(user);
    await testKnex()('users').where({ id: user.id }).update({ status: 'locked' });
    const login = await request(app).post('/api/auth/login').send({ identifier: user.email, password: user.password });
    const res = await refresh(session.refresh_token);
    expect(res.status).toBe(401);
    expect(res.body).toEqual(login.body);
    expect(res.body.error).toBe('AccountLocked');
    expect(res.headers['retry-after']).toBeUndefined();
  });

  it('keeps refreshing during a lockout after failed logins (a stranger guessing passwords cannot cut a session off)', async () => {
    const user = await createUser();
    const session = await logIn(user);
    for (let attempt = 0; attempt < 5; attempt++) {
      await request(app).post('/api/auth/login').send({ identifier: user.email, password: 'wrong password, again' });
    }
    const login = await request(app).post('/api/auth/login').send({ identifier: user.email, password: user.password });
    expect(login.body.error).toBe('AccountLocked');
    expect(Number(login.headers['retry-after'])).toBeGreaterThan(14 * 60);
    expect((await me(session.access_token)).status).toBe(200);
    const res = await refresh(session.refresh_token);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((await me(res.body.data.access_token)).status).toBe(200);
    // The lockout still stands for logins.
    const again = await request(app).post('/api/auth/login').send({ identifier: user.email, password: user.password });
    expect(again.body.error).toBe('AccountLocked');
  });

  it('validates the body against the contract', async () => {
    for (const body of [{}, { refresh_token: 'short' }, { refresh_token: 'rt_0123456789abcdefghij', extra: 1 }]) {
      const res = await request(app).post('/api/auth/refresh').send(body);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('ValidationError');
    }
  });
});

describe('POST /auth/logout', () => {
  it('revokes the session: the same access token and its refresh token are refused afterwards', async () => {
    const session = await logIn();
    const res = await request(app).post('/api/auth/logout').set(bearer(session.access_token));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { session_id: session.session_id, revoked: true }, message: 'Logged out.' });
    expect((await me(session.access_token)).status).toBe(401);
    expect((await request(app).post('/api/auth/logout').set(bearer(session.access_token))).status).toBe(401);
    expect((await refresh(session.refresh_token)).status).toBe(401);
    const row = await testKnex()('sessions').where({ id: session.session_id }).first('revoked_reason');
    expect(row.revoked_reason).toBe('logout');
  });

  it('only ends the session of the token, not the user\'s other sessions', async () => {
    const user = await createUser();
    const login = async () => (await request(app).post('/api/auth/login').send({ identifier: user.email, password: user.password })).body.data as Tokens;
    const a = await login();
    const b = await login();
    await request(app).post('/api/auth/logout').set(bearer(a.access_token));
    expect((await me(b.access_token)).status).toBe(200);
  });

  it('requires a token', async () => {
    const res = await request(app).post('/api/auth/logout');
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('Unauthorized');
  });
});
