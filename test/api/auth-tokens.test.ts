import crypto from 'node:crypto';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, testConfig, type App } from '../support/app';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, createUser } from '../support/factories';

let app: App;
const config = testConfig();

function b64url(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

async function liveSession(): Promise<{ userId: string; sessionId: string; token: string }> {
  const user = await createUser();
  const tokens = await app.services.sessions.open(testKnex(), user);
  return { userId: user.id, sessionId: tokens.session_id, token: tokens.access_token };
}

function sign(claims: object, options: jwt.SignOptions & { secret?: string; noExpiry?: boolean } = {}): string {
  const { secret, noExpiry, ...rest } = options;
  return jwt.sign(claims, secret ?? config.jwt.secret, {
    algorithm: 'HS256',
    issuer: config.jwt.issuer,
    audience: config.jwt.audience,
    ...(noExpiry ? {} : { expiresIn: 600 }),
    ...rest,
  });
}

async function expectUnauthorized(headers: Record<string, string>): Promise<void> {
  const res = await request(app).get('/api/me').set(headers);
  expect(res.status).toBe(401);
  expect(res.body).toMatchObject({ success: false, error: 'Unauthorized' });
  expect(typeof res.body.message).toBe('string');
  expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
  expect(JSON.stringify(res.body)).not.toMatch(/stack|at .*\.ts/);
}

beforeAll(async () => {
  app = await buildTestApp();
});

describe('access tokens', () => {
  it('a valid token is accepted (control case)', async () => {
    const { token } = await liveSession();
    expect((await request(app).get('/api/me').set(bearer(token))).status).toBe(200);
  });

  it('refuses a missing Authorization header', async () => {
    await expectUnauthorized({});
  });

  it.each([
    ['another scheme', 'Basic dXNlcjpwYXNz'],
    ['no token', 'Bearer'],
    ['not a JWT', 'Bearer not-a-jwt'],
    ['garbage segments', 'Bearer a.b.c'],
    ['token without scheme', 'eyJhbGciOiJIUzI1NiJ9.e30.sig'],
  ])('refuses a malformed header (%s)', async (_name, value) => {
    await expectUnauthorized({ Authorization: value });
  });

  it('refuses alg "none" (unsigned token with valid claims)', async () => {
    const { userId, sessionId } = await liveSession();
    const now = Math.floor(Date.now() / 1000);
    const payload = { sub: userId, sid: sessionId, iss: config.jwt.issuer, aud: config.jwt.audience, iat: now, exp: now + 600 };
    await expectUnauthorized({ Authorization: `Bearer ${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(payload)}.` });
    await expectUnauthorized({ Authorization: `Bearer ${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(payload)}` });
  });

  it('refuses a bad signature', async () => {
    const { userId, sessionId, token } = await liveSession();
    await expectUnauthorized(bearer(sign({ sid: sessionId }, { subject: userId, secret: 'another-secret-that-is-long-enough-0123456789' })));
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const flipped = `${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`;
    await expectUnauthorized(bearer(`${header}.${payload}.${flipped}`));
    // A tampered payload under the original signature.
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    await expectUnauthorized(bearer(`${header}.${b64url({ ...claims, adm: true })}.${signature}`));
  });

  it('refuses another algorithm (HS512 with the right secret)', async () => {
    const { userId, sessionId } = await liveSession();
    await expectUnauthorized(bearer(sign({ sid: sessionId }, { subject: userId, algorithm: 'HS512' })));
  });

  it('refuses a wrong audience and a wrong issuer', async () => {
    const { userId, sessionId } = await liveSession();
    await expectUnauthorized(bearer(sign({ sid: sessionId }, { subject: userId, audience: 'someone-else' })));
    await expectUnauthorized(bearer(sign({ sid: sessionId }, { subject: userId, issuer: 'https://evil.example' })));
    const control = await request(app).get('/api/me').set(bearer(sign({ sid: sessionId }, { subject: userId })));
    expect(control.status).toBe(200);
  });

  it('refuses an expired token', async () => {
    const { userId, sessionId } = await liveSession();
    const now = Math.floor(Date.now() / 1000);
    await expectUnauthorized(bearer(sign({ sid: sessionId, iat: now - 3600, exp: now - 60 }, { subject: userId, noExpiry: true })));
  });

  it('refuses a token without a subject or a session id', async () => {
    const { userId, sessionId } = await liveSession();
    await expectUnauthorized(bearer(sign({ sid: sessionId })));
    await expectUnauthorized(bearer(sign({}, { subject: userId })));
    await expectUnauthorized(bearer(sign({ sid: crypto.randomUUID() }, { subject: userId })));
  });

  it('refuses a token whose session was revoked or expired, before the token itself expires', async () => {
    const revoked = await liveSession();
    await testKnex()('sessions').where({ id: revoked.sessionId }).update({ revoked_at: testKnex().fn.now(), revoked_reason: 'logout' });
    await expectUnauthorized(bearer(revoked.token));
    const expired = await liveSession();
    await testKnex()('sessions').where({ id: expired.sessionId }).update({ expires_at: testKnex().raw("now() - interval '1 second'") });
    await expectUnauthorized(bearer(expired.token));
  });

  it.each(['disabled', 'locked'])('refuses the token of a %s user at once', async (status) => {
    const user = await createUser();
    const token = await accessTokenFor(app, user);
    await testKnex()('users').where({ id: user.id }).update({ status });
    await expectUnauthorized(bearer(token));
  });

  it("refuses a session id that belongs to another user", async () => {
    const a = await liveSession();
    const b = await liveSession();
    await expectUnauthorized(bearer(sign({ sid: b.sessionId }, { subject: a.userId })));
  });
});
