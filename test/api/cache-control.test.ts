import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { accessTokenFor, bearer, createMember, createOrganization } from '../support/factories';

let app: App;
let auth: { Authorization: string };
let orgId: string;

beforeAll(async () => {
  app = await buildTestApp();
  const org = await createOrganization();
  orgId = org.id;
  auth = bearer(await accessTokenFor(app, await createMember(org, 'owner')));
});

describe('Cache-Control on authenticated responses', () => {
  it.each([
    ['GET', '/api/me', 200],
    ['GET', '/api/wallets', 200],
    ['GET', '/api/transfers', 200],
    ['GET', '/api/transfers/00000000-0000-4000-8000-000000000000', 404],
    ['POST', '/api/transfers', 400],
  ])('%s %s answers no-store', async (method, path, status) => {
    const res = await (method === 'GET' ? request(app).get(path) : request(app).post(path).send({})).set(auth);
    expect(res.status).toBe(status);
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('Business lists answer no-store', async () => {
    for (const path of ['payment-links', 'invoices', 'accounts', 'payments']) {
      const res = await request(app).get(`/api/business/organizations/${orgId}/${path}`).set(auth);
      expect(res.status, path).toBe(200);
      expect(res.headers['cache-control'], path).toBe('no-store');
    }
  });
});
