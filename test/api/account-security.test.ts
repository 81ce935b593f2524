import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { bearer, createUser, TEST_PASSWORD, uniqueEmail, uniquePhone, type TestUser } from '../support/factories';

let app: App;

beforeAll(async () => {
  app = await buildTestApp();
});

const NEW_PASSWORD = 'baobab-river-quartz-77';

async function latestMessage(to: string): Promise<{ template: string; body: string } | undefined> {
  const res = await request(app).get('/api/test-helpers/outbox').query({ to });
  return res.body.data.data[0];
}

async function latestCode(to: string): Promise<string> {
  const message = await latestMessage(to);
  const code = /\b(\d{6})\b/.exec(message?.body ?? '')?.[1];
  if (!code) throw new Error(`no code in ${JSON.stringify(message)}`);
  return code;
}

async function logIn(user: TestUser, password = TEST_PASSWORD, userAgent = 'test-agent') {
  const identifier = user.email ?? user.phone;
  const res = await request(app).post('/api/auth/login').set('User-Agent', userAgent).send({ identifier, password });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as { access_token: string; refresh_token: string; session_id: string };
}

describe('password reset', () => {
  it('the code sets a new password and ends every session: an old access token answers 401, an old refresh token too', async () => {
    const user = await createUser({ email: uniqueEmail('reset') });
    const [phoneSession, laptopSession] = [await logIn(user), await logIn(user)];
    expect((await request(app).get('/api/me').set(bearer(phoneSession.access_token))).status).toBe(200);

    const asked = await request(app).post('/api/auth/password-reset').send({ identifier: user.email });
    expect(asked.status).toBe(202);
    expect(asked.body.data.channel).toBe('email');
    expect((await latestMessage(user.email as string))?.template).toBe('password_reset_code');
    const code = await latestCode(user.email as string);

    const confirmed = await request(app).post('/api/auth/password-reset/confirm').send({ identifier: user.email, code, new_password: NEW_PASSWORD });
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    expect(confirmed.body.data).toEqual({ sessions_revoked: 2 });

    for (const session of [phoneSession, laptopSession]) {
      const me = await request(app).get('/api/me').set(bearer(session.access_token));
      expect(me.status).toBe(401);
      const refreshed = await request(app).post('/api/auth/refresh').send({ refresh_token: session.refresh_token });
      expect(refreshed.status).toBe(401);
    }
    expect((await request(app).post('/api/auth/login').send({ identifier: user.email, password: TEST_PASSWORD })).status).toBe(401);
    await logIn(user, NEW_PASSWORD);
    expect((await latestMessage(user.email as string))?.template).toBe('password_changed');

    // The code is spent.
    const again = await request(app).post('/api/auth/password-reset/confirm').send({ identifier: user.email, code, new_password: 'another-strong-phrase-88' });
    expect(again.body.error).toBe('VerificationExpired');
  });

  it('answers an identifier nobody has exactly as an account (202, then wrong codes), and sends nothing', async () => {
    const nobody = uniquePhone();
    const user = await createUser({ phone: uniquePhone(), email: null });
    const [a, b] = await Promise.all([
      request(app).post('/api/auth/password-reset').send({ identifier: nobody }),
      request(app).post('/api/auth/password-reset').send({ identifier: user.phone }),
    ]);
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(Object.keys(a.body.data)).toEqual(Object.keys(b.body.data));
    expect(a.body.data.channel).toBe('sms');
    expect(await latestMessage(nobody)).toBeUndefined();
    const tries = [];
    for (let i = 0; i < 6; i++) {
      const res = await request(app).post('/api/auth/password-reset/confirm').send({ identifier: nobody, code: '123456', new_password: NEW_PASSWORD });
      tries.push(res.body.error === 'InvalidVerificationCode' ? res.body.details.attempts_left : res.body.error);
    }
    expect(tries).toEqual([4, 3, 2, 1, 0, 'VerificationExpired']);
  });

  it('wrong codes of an account count down (attempts_left 4 to 0); the sixth try, and then the right code, answer VerificationExpired', async () => {
    const user = await createUser({ email: uniqueEmail('wrongreset') });
    await request(app).post('/api/auth/password-reset').send({ identifier: user.email });
    const code = await latestCode(user.email as string);
    const wrongCode = code === '000000' ? '000001' : '000000';
    const tries = [];
    for (let i = 0; i < 6; i++) {
      const res = await request(app).post('/api/auth/password-reset/confirm').send({ identifier: user.email, code: wrongCode, new_password: NEW_PASSWORD });
      expect(res.status).toBe(422);
      tries.push(res.body.error === 'InvalidVerificationCode' ? res.body.details.attempts_left : res.body.error);
    }
    expect(tries).toEqual([4, 3, 2, 1, 0, 'VerificationExpired']);
    const right = await request(app).post('/api/auth/password-reset/confirm').send({ identifier: user.email, code, new_password: NEW_PASSWORD });
    expect(right.status).toBe(422);
    expect(right.body.error).toBe('VerificationExpired');
    expect((await request(app).post('/api/auth/login').send({ identifier: user.email, password: TEST_PASSWORD })).status).toBe(200);
  });

  it('refuses a weak new password with the reason, without spending the code', async () => {
    const user = await createUser({ email: uniqueEmail('weakreset') });
    await request(app).post('/api/auth/password-reset').send({ identifier: user.email });
    const code = await latestCode(user.email as string);
    const weak = await request(app).post('/api/auth/password-reset/confirm').send({ identifier: user.email, code, new_password: 'password1234' });
    expect(weak.status).toBe(422);
    expect(weak.body).toMatchObject({ error: 'WeakPassword', details: { reason: 'too_common' } });
    const containing = await request(app).post('/api/auth/password-reset/confirm').send({ identifier: user.email, code, new_password: `${(user.email as string).split('@')[0]}-x` });
    expect(containing.body).toMatchObject({ error: 'WeakPassword', details: { reason: 'contains_identifier' } });
    const ok = await request(app).post('/api/auth/password-reset/confirm').send({ identifier: user.email, code, new_password: NEW_PASSWORD });
    expect(ok.status).toBe(200);
  });

  it('only the newest code asked for works', async () => {
    const user = await createUser({ email: uniqueEmail('newest') });
    await request(app).post('/api/auth/password-reset').send({ identifier: user.email });
    const first = await latestCode(user.email as string);
    await request(app).post('/api/auth/password-reset').send({ identifier: user.email });
    const second = await latestCode(user.email as string);
    if (first !== second) {
      const old = await request(app).post('/api/auth/password-reset/confirm').send({ identifier: user.email, code: first, new_password: NEW_PASSWORD });
      expect(old.body.error).toBe('InvalidVerificationCode');
    }
    const res = await request(app).post('/api/auth/password-reset/confirm').send({ identifier: user.email, code: second, new_password: NEW_PASSWORD });
    expect(res.status).toBe(200);
  });
});

describe('POST /me/password', () => {
  it('changes the password and ends every other session, keeping the caller’s', async () => {
    const user = await createUser({ email: uniqueEmail('change') });
    const mine = await logIn(user);
    const other = await logIn(user);
    const res = await request(app).post('/api/me/password').set(bearer(mine.access_token)).send({ current_password: TEST_PASSWORD, new_password: NEW_PASSWORD });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toEqual({ sessions_revoked: 1 });
    expect((await request(app).get('/api/me').set(bearer(mine.access_token))).status).toBe(200);
    expect((await request(app).get('/api/me').set(bearer(other.access_token))).status).toBe(401);
    await logIn(user, NEW_PASSWORD);
  });

  it('refuses a wrong current password, the same password again, and a weak one', async () => {
    const user = await createUser({ email: uniqueEmail('refuse') });
    const { access_token: token } = await logIn(user);
    const wrongCurrent = await request(app).post('/api/me/password').set(bearer(token)).send({ current_password: 'not-my-password', new_password: NEW_PASSWORD });
    expect(wrongCurrent.status).toBe(422);
    expect(wrongCurrent.body.error).toBe('InvalidCurrentPassword');
    const same = await request(app).post('/api/me/password').set(bearer(token)).send({ current_password: TEST_PASSWORD, new_password: TEST_PASSWORD });
    expect(same.body).toMatchObject({ error: 'WeakPassword', details: { reason: 'same_as_current' } });
    const short = await request(app).post('/api/me/password').set(bearer(token)).send({ current_password: TEST_PASSWORD, new_password: 'abc' });
    expect(short.body).toMatchObject({ error: 'WeakPassword', details: { reason: 'too_short' } });
    await logIn(user, TEST_PASSWORD);
  });
});

describe('GET /me/sessions and DELETE /me/sessions/{sessionId}', () => {
  it('lists the live sessions with their client, marks the caller’s, and ends another at once', async () => {
    const user = await createUser({ email: uniqueEmail('sessions') });
    const phone = await logIn(user, TEST_PASSWORD, 'WalletApp/2.4 (Android 14)');
    const laptop = await logIn(user, TEST_PASSWORD, 'Mozilla/5.0 (X11; Linux x86_64)');
    const ended = await logIn(user);
    await request(app).post('/api/auth/logout').set(bearer(ended.access_token));

    const list = await request(app).get('/api/me/sessions').set(bearer(phone.access_token));
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    const sessions = list.body.data.data as Array<{ id: string; current: boolean; user_agent: string; ip: string }>;
    expect(sessions.map((s) => s.id).sort()).toEqual([phone.session_id, laptop.session_id].sort());
    expect(sessions.find((s) => s.id === phone.session_id)).toMatchObject({ current: true, user_agent: 'WalletApp/2.4 (Android 14)' });
    expect(sessions.find((s) => s.id === laptop.session_id)).toMatchObject({ current: false, user_agent: 'Mozilla/5.0 (X11; Linux x86_64)' });
    expect(sessions[0]?.ip).toMatch(/127\.0\.0\.1|::1/);

    const revoked = await request(app).delete(`/api/me/sessions/${laptop.session_id}`).set(bearer(phone.access_token));
    expect(revoked.status).toBe(200);
    expect(revoked.body.data).toEqual({ session_id: laptop.session_id, revoked: true });
    expect((await request(app).get('/api/me').set(bearer(laptop.access_token))).status).toBe(401);
    expect((await request(app).post('/api/auth/refresh').send({ refresh_token: laptop.refresh_token })).status).toBe(401);
    expect((await request(app).get('/api/me').set(bearer(phone.access_token))).status).toBe(200);

    // Already ended, someone else's, or unknown: the same 404.
    const stranger = await logIn(await createUser({ email: uniqueEmail('stranger') }));
    for (const id of [laptop.session_id, stranger.session_id, '00000000-0000-4000-8000-000000000000']) {
      const res = await request(app).delete(`/api/me/sessions/${id}`).set(bearer(phone.access_token));
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('SessionNotFound');
    }
    expect((await request(app).get('/api/me').set(bearer(stranger.access_token))).status).toBe(200);
  });

  it('a refreshed session keeps its login time and its place in the list', async () => {
    const user = await createUser({ email: uniqueEmail('refresh') });
    const first = await logIn(user);
    const before = (await request(app).get('/api/me/sessions').set(bearer(first.access_token))).body.data.data[0];
    const refreshed = await request(app).post('/api/auth/refresh').set('User-Agent', 'renewed-agent').send({ refresh_token: first.refresh_token });
    const after = (await request(app).get('/api/me/sessions').set(bearer(refreshed.body.data.access_token))).body.data.data;
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ id: refreshed.body.data.session_id, created_at: before.created_at, current: true, user_agent: 'renewed-agent' });
  });
});
