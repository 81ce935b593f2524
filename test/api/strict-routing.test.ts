import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { accessTokenFor, bearer, createUser } from '../support/factories';

let app: App;
let auth: { Authorization: string };

beforeAll(async () => {
  app = await buildTestApp();
  auth = bearer(await accessTokenFor(app, await createUser()));
});

describe('strict routing', () => {
  it.each(['/api/transfers/', '/api/wallets/', '/api/me/', '/api/health/', '/api/transfers/?limit=5', '/api/openapi.json/'])('answers 404 NotFound for %s (trailing slash)', async (path) => {
    const res = await request(app).get(path).set(auth);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ success: false, error: 'NotFound' });
  });

  it('still answers the paths as written (control case)', async () => {
    expect((await request(app).get('/api/transfers').set(auth)).status).toBe(200);
    expect((await request(app).get('/api/transfers?limit=5').set(auth)).status).toBe(200);
  });
});
