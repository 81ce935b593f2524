import { performance } from 'node:perf_hooks';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ApiKeyScope } from '../../src/contract';
import { scopeGrants } from '../../src/modules/api-keys';
import { buildTestApp, type App } from '../support/app';
import { API_KEY_SCOPES, createApiKey, expireApiKey, type TestApiKey } from '../support/api-keys';
import { contractOperations, contractRequest, withContractBody, type ContractOperation } from '../support/contract-requests';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, businessPath, createMember, createOrganization, type TestOrganization } from '../support/factories';

/**
 * Every Business operation that names a scope in its `x-access` rule, read
 * from the contract (not a hand list), with an API key: with its scope, with every other
 * scope, of another organisation, revoked, expired, during and after a roll; every operation
 * keys may not call; a mistyped key; a revocation racing 100 requests.
 */
const NOT_FOUND_BODY = { success: false, error: 'NotFound', message: 'Organization not found.' };
const POLICY_ERRORS = ['InsufficientRole', 'InsufficientScope', 'ApiKeyNotAllowed', 'FeatureUnavailable', 'ModuleLocked', 'OrganizationInactive'];

const keyCallable = (op: ContractOperation) => (op.security ?? []).some((requirement) => 'apiKeyAuth' in (requirement as object));
const operations = contractOperations();
const scoped = operations.filter((op) => op.access?.scope);
// The test helpers take no authentication outside production (a test key changes nothing there).
const refused = operations.filter((op) => !keyCallable(op) && op.operationId !== 'getHealth' && !op.path.startsWith('/test-helpers/'));

let app: App;
let org: TestOrganization;
let other: TestOrganization;
const single = new Map<ApiKeyScope, TestApiKey>();
let foreign: TestApiKey;
let revoked: TestApiKey;
let expired: TestApiKey;
/** The organisation whose keys are rolled: `org` holds one key per scope, near its 20 active keys. */
let rollOrg: TestOrganization;
let rollingOld: TestApiKey;
let rollingNew: string;
let rolledOld: TestApiKey;
let rolledNew: string;

function send(operationId: string, orgId: string, auth?: { Authorization: string }) {
  const req = contractRequest(operationId, { orgId });
  let call = request(app)[req.method](req.url).set(req.headers);
  if (auth) call = call.set(auth);
  return withContractBody(call, req);
}

function expectPassedPolicy(res: request.Response): void {
  expect(res.status, JSON.stringify(res.body)).not.toBe(401);
  expect(res.status, JSON.stringify(res.body)).not.toBe(500);
  expect(POLICY_ERRORS, JSON.stringify(res.body)).not.toContain(res.body.error);
  expect(res.body).not.toEqual(NOT_FOUND_BODY);
}

async function roll(key: TestApiKey, owner: string, seconds: number): Promise<string> {
  const res = await request(app).post(`${businessPath(rollOrg.id)}/api-keys/${key.id}/roll`).set(bearer(owner)).send({ expire_current_in_seconds: seconds });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.secret as string;
}

beforeAll(async () => {
  app = await buildTestApp();
  org = await createOrganization();
  other = await createOrganization();
  const creator = await createMember(org, 'owner');
  const owner = await accessTokenFor(app, creator);
  for (const scope of API_KEY_SCOPES) single.set(scope, await createApiKey(app, org, [scope], { creator }));
  foreign = await createApiKey(app, other, API_KEY_SCOPES);
  revoked = await createApiKey(app, org, API_KEY_SCOPES, { creator });
  expect((await request(app).delete(`${businessPath(org.id)}/api-keys/${revoked.id}`).set(bearer(owner))).status).toBe(200);
  expired = await createApiKey(app, org, API_KEY_SCOPES, { creator });
  await expireApiKey(expired.id);
  rollOrg = await createOrganization();
  const rollCreator = await createMember(rollOrg, 'owner');
  const rollOwner = await accessTokenFor(app, rollCreator);
  rollingOld = await createApiKey(app, rollOrg, API_KEY_SCOPES, { creator: rollCreator });
  rollingNew = await roll(rollingOld, rollOwner, 3600);
  rolledOld = await createApiKey(app, rollOrg, API_KEY_SCOPES, { creator: rollCreator });
  rolledNew = await roll(rolledOld, rollOwner, 0);
});

/** The organisation's own management, which no API key reaches (besides reading its members). */
const MANAGED_BY_PEOPLE: string[] = [
  'updateOrganizationMember', 'removeOrganizationMember', 'listOrganizationInvitations', 'createOrganizationInvitation',
  'revokeOrganizationInvitation', 'submitOrganizationVerification',
  // A payout's second approval is a person's, and so is the threshold that asks for it.
  'approvePayout', 'updatePayoutSettings',
];

describe('the contract declares the scopes', () => {
  it('every Business operation names a scope and lists apiKeyAuth, except the key management and organisation management ones; nothing else lists apiKeyAuth', () => {
    const business = operations.filter((op) => op.path.startsWith('/business/organizations/{orgId}/'));
    expect(scoped.length).toBeGreaterThanOrEqual(24);
    for (const op of business) {
      // Keys, members, invitations, the business verification and payout approvals are managed by
      // people: a key may read the members (members:read) but never change them.
      const managesKeys = op.path.startsWith('/business/organizations/{orgId}/api-keys') || MANAGED_BY_PEOPLE.includes(op.operationId);
      expect(Boolean(op.access?.scope), op.operationId).toBe(!managesKeys);
      expect(keyCallable(op), op.operationId).toBe(!managesKeys);
      if (op.access?.scope) expect(API_KEY_SCOPES as readonly string[]).toContain(op.access.scope);
      // A write operation needs a write scope.
      if (op.access?.scope && op.access.write) expect(op.access.scope.endsWith(':write'), op.operationId).toBe(true);
    }
    expect(operations.filter((op) => keyCallable(op) && !op.access?.scope)).toEqual([]);
  });
});

describe('every Business operation with an API key', () => {
  for (const op of scoped) {
    const scope = op.access?.scope as ApiKeyScope;

    it(`${op.operationId}: a key with ${scope} passes the policy; a key with only its write scope too`, async () => {
      expectPassedPolicy(await send(op.operationId, org.id, single.get(scope)?.auth));
      const write = scope.replace(/:read$/, ':write') as ApiKeyScope;
      // A read-only scope (members:read) has no write scope to include it.
      if ((API_KEY_SCOPES as readonly string[]).includes(write)) expectPassedPolicy(await send(op.operationId, org.id, single.get(write)?.auth));
    });

    it(`${op.operationId}: a key with any other scope answers 403 InsufficientScope naming ${scope}`, async () => {
      const others = API_KEY_SCOPES.filter((granted) => !scopeGrants([granted], scope));
      expect(others.length).toBeGreaterThanOrEqual(12);
      for (const granted of others) {
        const res = await send(op.operationId, org.id, single.get(granted)?.auth);
        expect(res.status, `${granted}: ${JSON.stringify(res.body)}`).toBe(403);
        expect(res.body).toEqual({
          success: false,
          error: 'InsufficientScope',
          message: `This API key does not have the ${scope} scope.`,
          details: { required_scope: scope, granted_scopes: [granted] },
        });
        expect(res.headers['x-accepted-scopes']).toBe(scope.endsWith(':read') ? `${scope}, ${scope.replace(':read', ':write')}` : scope);
      }
    });

    it(`${op.operationId}: another organisation's key answers 404, as for a non-member`, async () => {
      const res = await send(op.operationId, org.id, foreign.auth);
      expect(res.status).toBe(404);
      expect(res.body).toEqual(NOT_FOUND_BODY);
    });

    it(`${op.operationId}: a revoked key and an expired key answer 401`, async () => {
      for (const [key, message] of [
        [revoked, 'The API key is revoked.'],
        [expired, 'The API key has expired.'],
      ] as const) {
        const res = await send(op.operationId, org.id, key.auth);
        expect([res.status, res.body.error, res.body.message]).toEqual([401, 'Unauthorized', message]);
        expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
      }
    });

    it(`${op.operationId}: during a roll both secrets pass; after it the old one answers 401 and the new one passes`, async () => {
      expectPassedPolicy(await send(op.operationId, rollOrg.id, rollingOld.auth));
      expectPassedPolicy(await send(op.operationId, rollOrg.id, bearer(rollingNew)));
      const old = await send(op.operationId, rollOrg.id, rolledOld.auth);
      expect([old.status, old.body.error]).toEqual([401, 'Unauthorized']);
      expectPassedPolicy(await send(op.operationId, rollOrg.id, bearer(rolledNew)));
    });
  }
});

describe('module locks, organisation status and operations keys may not call', () => {
  for (const op of scoped.filter((o) => o.access?.write && o.access.module)) {
    it(`${op.operationId}: a locked module answers 423 to a key`, async () => {
      const locked = await createOrganization({ modules: { [op.access?.module as string]: 'locked' } });
      const key = await createApiKey(app, locked, API_KEY_SCOPES);
      const res = await send(op.operationId, locked.id, key.auth);
      expect([res.status, res.body.error]).toEqual([423, 'ModuleLocked']);
    });
  }
  for (const op of scoped.filter((o) => o.access?.requiresActiveOrg)) {
    it(`${op.operationId}: an inactive organisation answers 422 to a key`, async () => {
      const inactive = await createOrganization({ status: 'inactive' });
      const key = await createApiKey(app, inactive, API_KEY_SCOPES);
      const res = await send(op.operationId, inactive.id, key.auth);
      expect([res.status, res.body.error]).toEqual([422, 'OrganizationInactive']);
    });
  }

  it('every operation keys may not call (personal routes, sessions, key management) answers 403 ApiKeyNotAllowed', async () => {
    const key = await createApiKey(app, other, API_KEY_SCOPES);
    const names = refused.map((op) => op.operationId);
    for (const expected of ['getMe', 'listWallets', 'listTransfers', 'createTransfer', 'getEscrow', 'createTontine', 'logout', 'refreshSession', 'getIdempotencyKey', 'listApiKeys', 'createApiKey']) {
      expect(names).toContain(expected);
    }
    for (const op of refused) {
      const res = await send(op.operationId, other.id, key.auth);
      expect([res.status, res.body.error], `${op.operationId}: ${JSON.stringify(res.body)}`).toEqual([403, 'ApiKeyNotAllowed']);
    }
  }, 300_000);
});

describe('a mistyped key', () => {
  it('answers 401 without any database query; a well-formed unknown key costs its lookup', async () => {
    const key = single.get('payments:read') as TestApiKey;
    const at = 30;
    const typo = `${key.secret.slice(0, at)}${key.secret[at] === 'A' ? 'B' : 'A'}${key.secret.slice(at + 1)}`;
    const queries: string[] = [];
    const listener = (query: { sql: string }) => queries.push(query.sql);
    const knex = testKnex();
    knex.on('query', listener);
    try {
      const res = await request(app).get(`${businessPath(org.id)}/payments`).set(bearer(typo));
      expect([res.status, res.body.error, res.body.message]).toEqual([401, 'Unauthorized', 'The API key is invalid.']);
      expect(queries).toEqual([]);
      const liveKey = key.secret.replace(/^sk_test_/, 'sk_live_');
      expect((await request(app).get(`${businessPath(org.id)}/payments`).set(bearer(liveKey))).status).toBe(401);
      expect(queries).toEqual([]);
      // The counter sees queries: a key with a right checksum but no row is looked up, then refused.
      const revokedRes = await request(app).get(`${businessPath(org.id)}/payments`).set(revoked.auth);
      expect(revokedRes.status).toBe(401);
      expect(queries.length).toBeGreaterThan(0);
    } finally {
      knex.removeListener('query', listener);
    }
  });
});

describe('a revocation racing 100 requests', () => {
  it('no request whose key was read after the revocation committed succeeds; every request after the DELETE answered is 401', async () => {
    const creator = await createMember(org, 'owner');
    const owner = await accessTokenFor(app, creator);
    const key = await createApiKey(app, org, ['payments:read'], { creator });
    const service = app.services.apiKeys;
    const original = service.authenticate.bind(service);
    const decisions: Array<{ startedAt: number; ok: boolean }> = [];
    service.authenticate = async (token, ip) => {
      const startedAt = performance.now();
      const decision = await original(token, ip);
      if (token === key.secret) decisions.push({ startedAt, ok: 'caller' in decision });
      return decision;
    };
    try {
      let committedAt = Number.POSITIVE_INFINITY;
      const sent: Array<Promise<{ status: number; sentAfterCommit: boolean }>> = [];
      let revocation: Promise<unknown> | undefined;
      const fire = () => {
        const sentAfterCommit = performance.now() > committedAt;
        sent.push(
          request(app)
            .get(`${businessPath(org.id)}/payments`)
            .set(key.auth)
            .then((res) => ({ status: res.status, sentAfterCommit })),
        );
      };
      // 80 requests race the DELETE (started after the 30th), one per turn of the event loop;
      // the last 20 leave once it has answered.
      for (let i = 0; i < 80; i += 1) {
        if (i === 30) {
          revocation = request(app)
            .delete(`${businessPath(org.id)}/api-keys/${key.id}`)
            .set(bearer(owner))
            .then((res) => {
              expect(res.status).toBe(200);
              committedAt = performance.now();
            });
        }
        fire();
        await new Promise((resolve) => setImmediate(resolve));
      }
      await revocation;
      for (let i = 0; i < 20; i += 1) fire();
      const results = await Promise.all(sent);
      for (const result of results) expect([200, 401]).toContain(result.status);
      for (const result of results.filter((r) => r.sentAfterCommit)) expect(result.status).toBe(401);
      // Server side: every key check that began after the DELETE had committed refused the key,
      // and exactly the requests whose check let them through succeeded.
      expect(decisions).toHaveLength(100);
      for (const decision of decisions.filter((d) => d.startedAt > committedAt)) expect(decision.ok).toBe(false);
      expect(results.filter((r) => r.status === 200)).toHaveLength(decisions.filter((d) => d.ok).length);
      expect(results.some((r) => r.status === 401)).toBe(true);
      expect((await request(app).get(`${businessPath(org.id)}/payments`).set(key.auth)).status).toBe(401);
    } finally {
      service.authenticate = original;
    }
  });
});
