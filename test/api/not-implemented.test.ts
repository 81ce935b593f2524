import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/http/app';
import { NOT_IMPLEMENTED_OPERATIONS } from '../../src/http/routes';
import { buildTestApp } from '../support/app';
import { contractRequest, findOperation } from '../support/contract-requests';
import { accessTokenFor, bearer, createUser } from '../support/factories';

let app: App;
let token: string;

beforeAll(async () => {
  app = await buildTestApp();
  token = await accessTokenFor(app, await createUser());
});

function send(operationId: string, withToken: boolean) {
  const req = contractRequest(operationId, {});
  let call = request(app)[req.method](req.url).set(req.headers);
  if (withToken) call = call.set(bearer(token));
  return req.body === undefined ? call : call.send(req.body as object);
}

describe('contract operations not built yet', () => {
  for (const { operationId, method, path } of NOT_IMPLEMENTED_OPERATIONS) {
    it(`${method.toUpperCase()} ${path} (${operationId}) answers 501 NotImplemented once authenticated`, async () => {
      expect(findOperation(operationId)).toMatchObject({ method, path });
      const res = await send(operationId, true);
      expect(res.status).toBe(501);
      expect(res.body).toEqual({ success: false, error: 'NotImplemented', message: `${operationId} is not implemented yet.` });
    });

    it(`${operationId}: authentication still comes first (401)`, async () => {
      const res = await send(operationId, false);
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('Unauthorized');
    });
  }

  it('a path outside the contract is a plain 404, not a 501', async () => {
    const res = await request(app).get('/api/not-in-the-contract').set(bearer(token));
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('NotFound');
  });
});
