import { Writable } from 'node:stream';
import pino from 'pino';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { memoryRateLimitBackend } from '../../src/http/rate-limit';
import { testConfig, composeTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { createUser } from '../support/factories';

let app: App;
const lines: string[] = [];

beforeAll(async () => {
  // The app's own logger at info level, writing into memory: every request line lands in `lines`.
  const capture = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  const config = testConfig({ LOG_LEVEL: 'info' });
  app = composeTestApp({ config, knex: testKnex(), logger: pino({ level: 'info' }, capture), rateLimitBackend: memoryRateLimitBackend() });
  await app.services.ready();
});

describe('request logs never carry credentials', () => {
  it('keeps the authorization header, cookies, passwords and tokens out of every line', async () => {
    const user = await createUser();
    const cookie = 'session=cookie-secret-4f1c9a7e2b';
    const before = lines.length;

    const login = await request(app)
      .post('/api/auth/login')
      .set('Cookie', cookie)
      .set('X-Request-Id', 'redaction-login')
      .send({ identifier: user.email, password: user.password });
    expect(login.status).toBe(200);
    const { access_token: accessToken, refresh_token: refreshToken } = login.body.data as { access_token: string; refresh_token: string };

    const me = await request(app).get('/api/me').set('Authorization', `Bearer ${accessToken}`).set('Cookie', cookie).set('X-Request-Id', 'redaction-me');
    expect(me.status).toBe(200);
    const wrong = await request(app).post('/api/auth/login').send({ identifier: user.email, password: 'wrong-password-9d8c7b6a' });
    expect(wrong.status).toBe(401);
    const refresh = await request(app).post('/api/auth/refresh').send({ refresh_token: refreshToken });
    expect(refresh.status).toBe(200);
    const badToken = await request(app).get('/api/me').set('Authorization', 'Bearer not-a-jwt-but-secret-7e6d5c');
    expect(badToken.status).toBe(401);
    // A body that is not JSON at all, with a password in it.
    const malformed = await request(app)
      .post('/api/auth/login')
      .set('Content-Type', 'application/json')
      .send(`{"identifier":"${user.email}","password":"malformed-secret-1a2b3c"`);
    expect(malformed.status).toBe(400);

    const written = lines.slice(before);
    const text = written.join('\n');
    // The lines are there, and they describe the requests (so absence below means something).
    const meLine = written
      .map((line) => JSON.parse(line) as { req?: { id?: string; method?: string; url?: string; headers?: Record<string, string> }; res?: { statusCode?: number } })
      .find((l) => l.req?.id === 'redaction-me');
    // The line names the request and its outcome, and carries no request header at all.
    expect(meLine?.req).toMatchObject({ method: 'GET', url: '/api/me' });
    expect(meLine?.res?.statusCode).toBe(200);
    expect(meLine?.req?.headers).toBeUndefined();
    expect(JSON.stringify(meLine)).not.toMatch(/authorization|cookie/i);
    expect(written.length).toBeGreaterThanOrEqual(6);

    for (const secret of [
      user.password,
      'wrong-password-9d8c7b6a',
      'malformed-secret-1a2b3c',
      accessToken,
      refreshToken,
      (refresh.body.data as { access_token: string }).access_token,
      (refresh.body.data as { refresh_token: string }).refresh_token,
      'cookie-secret-4f1c9a7e2b',
      'not-a-jwt-but-secret-7e6d5c',
    ]) {
      expect(text).not.toContain(secret);
    }
  });
});
