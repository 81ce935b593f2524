import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { OPERATIONS, type OperationId } from '../../src/contract';
import { NOT_IMPLEMENTED } from '../../src/handlers';
import { buildTestApp, type App } from '../support/app';
import { contractOperations, contractRequest, withContractBody, findOperation } from '../support/contract-requests';
import { accessTokenFor, bearer, createMember, createOrganization, createUser } from '../support/factories';

// Widened: the list may be empty (every operation of the contract has its handler).
const NOT_IMPLEMENTED_IDS: readonly OperationId[] = NOT_IMPLEMENTED;
const NOT_IMPLEMENTED_OPERATIONS = NOT_IMPLEMENTED_IDS.map((operationId) => ({ operationId, method: OPERATIONS[operationId].method, path: OPERATIONS[operationId].path }));

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

  it('the list has no duplicates and names only contract operations', () => {
    const ids = NOT_IMPLEMENTED_OPERATIONS.map((op) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { operationId, method, path } of NOT_IMPLEMENTED_OPERATIONS) expect(findOperation(operationId)).toMatchObject({ method, path });
  });

  it('every other contract operation is implemented: none of them answers 501', async () => {
    // The owner of an active organisation with every module open passes the access policy of
    // every Business route, so a request reaches the route or, if there is none, the 501 fallback.
    const org = await createOrganization();
    const owner = await createMember(org, 'owner');
    const listed = new Set<string>(NOT_IMPLEMENTED_OPERATIONS.map((op) => op.operationId));
    const operations = contractOperations().filter((op) => !listed.has(op.operationId));
    expect(operations.length).toBeGreaterThan(20);
    const unanswered: string[] = [];
    for (const op of operations) {
      const req = contractRequest(op.operationId, { orgId: org.id });
      const secured = op.security === undefined || op.security.length > 0;
      // A fresh session per call: logout (one of the operations) ends the one it is given.
      let call = request(app)[req.method](req.url).set(req.headers);
      // Closing an account ends it for good: it closes an account of its own, not the owner's.
      if (secured) call = call.set(bearer(await accessTokenFor(app, op.operationId === 'closeAccount' ? await createUser() : owner)));
      const res = await withContractBody(call, req);
      // Got past authentication (a 401 would hide a missing route), and a route answered.
      if (secured) expect(res.status, `${op.operationId}: ${JSON.stringify(res.body)}`).not.toBe(401);
      if (res.status === 501 || res.body?.error === 'NotImplemented') unanswered.push(op.operationId);
    }
    expect(unanswered, 'contract operations without a handler and not in NOT_IMPLEMENTED').toEqual([]);
    // One request (and one session) per operation of the contract, each compiling its validators on first use.
  }, 420_000);

  it('a path outside the contract is a plain 404, not a 501', async () => {
    const res = await request(app).get('/api/not-in-the-contract').set(bearer(token));
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('NotFound');
  });
});
