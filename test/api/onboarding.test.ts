import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { openDisplayName } from '../../src/modules/auth';
import { signupNameContext } from '../../src/modules/onboarding';
import { PiiCipherError } from '../../src/pii-cipher';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { bearer, createUser, TEST_PASSWORD, uniqueEmail, uniquePhone } from '../support/factories';

let app: App;

beforeAll(async () => {
  app = await buildTestApp();
});

const STRONG = 'kora-lagoon-mango-41';
/** A value sealed by the PII cipher: `<key id>:<base64url>`. */
const SEALED = /^[A-Za-z0-9_-]{1,32}:[A-Za-z0-9_-]{38,}$/;

interface OutboxMessage {
  to: string;
  channel: string;
  template: string;
  body: string;
}

async function outbox(to: string): Promise<OutboxMessage[]> {
  const res = await request(app).get('/api/test-helpers/outbox').query({ to });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.data as OutboxMessage[];
}

/** The six digits of the newest message to `to`. */
async function latestCode(to: string): Promise<string> {
  const [message] = await outbox(to);
  const code = /\b(\d{6})\b/.exec(message?.body ?? '')?.[1];
  if (!code) throw new Error(`no code in ${JSON.stringify(message)}`);
  return code;
}

function wrong(code: string): string {
  return String((Number(code) + 1) % 1_000_000).padStart(6, '0');
}

async function signUp(identifier: string, overrides: Record<string, unknown> = {}) {
  return request(app)
    .post('/api/auth/signup')
    .send({ identifier, password: STRONG, full_name: 'Awa Kouassi', country: 'CI', accept_terms: true, ...overrides });
}

describe('sign-up with a one-time code', () => {
  it('a telephone number: 202, the code by SMS in the outbox, the code opens a session of a new tier_0 user who can log in', async () => {
    const phone = uniquePhone();
    const started = await signUp(phone);
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    expect(started.body.data).toMatchObject({ channel: 'sms' });
    const expiresIn = Date.parse(started.body.data.expires_at) - Date.now();
    expect(expiresIn).toBeGreaterThan(9 * 60_000);
    expect(expiresIn).toBeLessThanOrEqual(10 * 60_000 + 1_000);

    const [message] = await outbox(phone);
    expect(message).toMatchObject({ to: phone, channel: 'sms', template: 'signup_code' });
    const code = await latestCode(phone);
    // Only a hash of the code is stored, and the name only sealed.
    const row = await testKnex()('signup_verifications').where({ id: started.body.data.verification_id }).first();
    expect(JSON.stringify(row)).not.toContain(code);
    expect(row.full_name).toMatch(SEALED);
    expect(JSON.stringify(row)).not.toContain('Kouassi');
    expect(app.services.piiCipher.openText(row.full_name, signupNameContext(row.id))).toBe('Awa Kouassi');

    const verified = await request(app).post('/api/auth/signup/verify').set('User-Agent', 'WalletApp/2.4').send({ verification_id: started.body.data.verification_id, code });
    expect(verified.status, JSON.stringify(verified.body)).toBe(201);
    expect(verified.headers['cache-control']).toBe('no-store');
    expect(verified.body.data).toMatchObject({ token_type: 'Bearer', expires_in: expect.any(Number), session_id: expect.any(String) });

    const me = await request(app).get('/api/me').set(bearer(verified.body.data.access_token));
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ phone, email: null, is_admin: false });
    expect(JSON.stringify(me.body)).not.toContain('Kouassi');
    const user = await testKnex()('users').where({ phone }).first();
    expect(user).toMatchObject({ status: 'active', country: 'CI' });
    // The name is ciphertext in the column, bound to its user: it opens there and nowhere else.
    expect(user.display_name).toMatch(SEALED);
    expect(JSON.stringify(user)).not.toContain('Kouassi');
    expect(openDisplayName(app.services.piiCipher, user.id, user.display_name)).toBe('Awa Kouassi');
    expect(() => openDisplayName(app.services.piiCipher, crypto.randomUUID(), user.display_name)).toThrow(PiiCipherError);
    expect((await testKnex()('signup_verifications').where({ id: started.body.data.verification_id }).first()).full_name).toBeNull();
    if ('tier' in user) expect(user.tier).toBe('tier_0');

    const login = await request(app).post('/api/auth/login').send({ identifier: phone, password: STRONG });
    expect(login.status).toBe(200);

    // The code is spent.
    const again = await request(app).post('/api/auth/signup/verify').send({ verification_id: started.body.data.verification_id, code });
    expect(again.status).toBe(422);
    expect(again.body.error).toBe('VerificationExpired');
  });

  it('an identifier that already has an account gets the same 202; its message carries no code and no code completes it', async () => {
    const existing = await createUser({ email: uniqueEmail('taken') });
    const fresh = uniqueEmail('fresh');
    const [taken, free] = await Promise.all([signUp(existing.email as string), signUp(fresh)]);
    expect(taken.status).toBe(202);
    expect(free.status).toBe(202);
    expect(Object.keys(taken.body.data).sort()).toEqual(Object.keys(free.body.data).sort());
    expect(taken.body.data.channel).toBe(free.body.data.channel);

    const [notice] = await outbox(existing.email as string);
    expect(notice?.template).toBe('signup_existing_account');
    expect(notice?.body).not.toMatch(/\d{6}/);

    // Every try answers as a wrong code does, down to VerificationExpired; the account is untouched.
    const attempts: Array<{ error: string; left?: number }> = [];
    for (let i = 0; i < 6; i++) {
      const res = await request(app).post('/api/auth/signup/verify').send({ verification_id: taken.body.data.verification_id, code: String(100000 + i) });
      expect(res.status).toBe(422);
      attempts.push({ error: res.body.error, left: res.body.details?.attempts_left });
    }
    expect(attempts).toEqual([
      { error: 'InvalidVerificationCode', left: 4 },
      { error: 'InvalidVerificationCode', left: 3 },
      { error: 'InvalidVerificationCode', left: 2 },
      { error: 'InvalidVerificationCode', left: 1 },
      { error: 'InvalidVerificationCode', left: 0 },
      { error: 'VerificationExpired', left: undefined },
    ]);
    const login = await request(app).post('/api/auth/login').send({ identifier: existing.email, password: TEST_PASSWORD });
    expect(login.status).toBe(200);
  });

  it('wrong codes count down (attempts_left 4 to 0), the fifth spends the verification, and then even the right code is refused', async () => {
    const email = uniqueEmail('wrong');
    const started = await signUp(email);
    const id = started.body.data.verification_id as string;
    const code = await latestCode(email);
    for (const left of [4, 3, 2, 1, 0]) {
      const res = await request(app).post('/api/auth/signup/verify').send({ verification_id: id, code: wrong(code) });
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ error: 'InvalidVerificationCode', details: { attempts_left: left } });
    }
    const sixth = await request(app).post('/api/auth/signup/verify').send({ verification_id: id, code: wrong(code) });
    expect(sixth.status).toBe(422);
    expect(sixth.body.error).toBe('VerificationExpired');
    const right = await request(app).post('/api/auth/signup/verify').send({ verification_id: id, code });
    expect(right.status).toBe(422);
    expect(right.body.error).toBe('VerificationExpired');
    expect(await testKnex()('users').where({ email }).first()).toBeUndefined();
  });

  it('an expired code answers VerificationExpired', async () => {
    const email = uniqueEmail('expired');
    const started = await signUp(email);
    const code = await latestCode(email);
    await testKnex()('signup_verifications').where({ id: started.body.data.verification_id }).update({ expires_at: testKnex().raw(`now() - interval '1 second'`) });
    const res = await request(app).post('/api/auth/signup/verify').send({ verification_id: started.body.data.verification_id, code });
    expect(res.status).toBe(422);
    expect(res.body.error).toBe('VerificationExpired');
    const unknown = await request(app).post('/api/auth/signup/verify').send({ verification_id: '00000000-0000-4000-8000-000000000000', code });
    expect(unknown.body.error).toBe('VerificationExpired');
  });

  it('refuses weak passwords with the reason, and sends nothing', async () => {
    const email = uniqueEmail('weak');
    const cases: Array<[string, string]> = [
      ['short-1', 'too_short'],
      ['password1234', 'too_common'],
      ['azertyuiop123', 'too_common'],
      [`${email.split('@')[0]}!x`, 'contains_identifier'],
    ];
    for (const [password, reason] of cases) {
      const res = await signUp(email, { password });
      expect(res.status, password).toBe(422);
      expect(res.body, password).toMatchObject({ error: 'WeakPassword', details: { reason } });
    }
    const phone = uniquePhone();
    const withNumber = await signUp(phone, { password: `zebra-${phone.slice(-8)}-moon` });
    expect(withNumber.body).toMatchObject({ error: 'WeakPassword', details: { reason: 'contains_identifier' } });
    expect(await outbox(email)).toEqual([]);
  });

  it('refuses a sign-up without accepted terms, a bad country or identifier (400)', async () => {
    for (const overrides of [{ accept_terms: false }, { country: 'ci' }, { identifier: 'not-an-identifier' }]) {
      const res = await signUp(uniqueEmail('bad'), overrides);
      expect(res.status, JSON.stringify(overrides)).toBe(400);
      expect(res.body.error).toBe('ValidationError');
    }
  });

  it('is rate limited per identifier whatever the address', async () => {
    const limited = await buildTestApp({ env: { RATE_LIMIT_CODES_PER_IDENTIFIER: '2' } });
    const email = uniqueEmail('flood');
    const send = () => request(limited).post('/api/auth/signup').send({ identifier: email, password: STRONG, full_name: 'A B', country: 'SN', accept_terms: true });
    expect((await send()).status).toBe(202);
    expect((await send()).status).toBe(202);
    const third = await send();
    expect(third.status).toBe(429);
    expect(third.body.error).toBe('RateLimitExceeded');
    // Another spelling of the same address shares the count; another identifier does not.
    expect((await request(limited).post('/api/auth/signup').send({ identifier: email.toUpperCase(), password: STRONG, full_name: 'A B', country: 'SN', accept_terms: true })).status).toBe(429);
    expect((await request(limited).post('/api/auth/signup').send({ identifier: uniqueEmail(), password: STRONG, full_name: 'A B', country: 'SN', accept_terms: true })).status).toBe(202);
  });
});
