import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, testConfig, type App } from '../support/app';
import { testKnex } from '../support/database';
import { bearer, createUser } from '../support/factories';

/** Access tokens must carry exp and iat, and may not outlive the configured lifetime (900 s). */
let app: App;
const config = testConfig();
const now = () => Math.floor(Date.now() / 1000);

async function session(): Promise<{ userId: string; sessionId: string }> {
  const user = await createUser();
  const tokens = await app.services.sessions.open(testKnex(), user);
  return { userId: user.id, sessionId: tokens.session_id };
}

/** An HS256 JWT of exactly the claims given (the library would add or drop iat and check exp's type). */
function signRaw(claims: Record<string, unknown>): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const body = `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ iss: config.jwt.issuer, aud: config.jwt.audience, ...claims })}`;
  return `${body}.${crypto.createHmac('sha256', config.jwt.secret).update(body).digest('base64url')}`;
}

beforeAll(async () => {
  app = await buildTestApp();
});

describe('access token time claims', () => {
  it('accepts a token with iat and exp within the lifetime (control case)', async () => {
    const { userId, sessionId } = await session();
    const res = await request(app).get('/api/me').set(bearer(signRaw({ sub: userId, sid: sessionId, iat: now(), exp: now() + 600 })));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });

  it.each([
    ['without exp', (t: number) => ({ iat: t })],
    ['without iat', (t: number) => ({ exp: t + 600 })],
    ['without either', () => ({})],
    ['issued in the future', (t: number) => ({ iat: t + 120, exp: t + 700 })],
    ['living longer than the access lifetime', (t: number) => ({ iat: t, exp: t + 30 * 86_400 })],
    ['older than the access lifetime', (t: number) => ({ iat: t - 3_600, exp: t - 3_600 + 30 * 86_400 })],
    ['with a non-numeric iat', (t: number) => ({ iat: String(t), exp: t + 600 })],
  ])('refuses a token %s with 401', async (_label, times) => {
    const { userId, sessionId } = await session();
    const res = await request(app).get('/api/me').set(bearer(signRaw({ sub: userId, sid: sessionId, ...times(now()) })));
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ success: false, error: 'Unauthorized' });
  });
});
