import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/http/app';
import { ROLES, type Role } from '../../src/contract';
import { ORGANIZATION_NOT_FOUND_MESSAGE } from '../../src/modules/organizations';
import { buildTestApp } from '../support/app';
import { contractOperations, contractRequest, type AccessRule } from '../support/contract-requests';
import { accessTokenFor, addMember, bearer, createMember, createOrganization, createUser, type TestOrganization, memberToken } from '../support/factories';

const BUSINESS_PREFIX = '/business/organizations/{orgId}';
const NOT_FOUND_BODY = { success: false, error: 'NotFound', message: ORGANIZATION_NOT_FOUND_MESSAGE };
const POLICY_ERRORS = ['InsufficientRole', 'FeatureUnavailable', 'ModuleLocked', 'OrganizationInactive'];

/** The x-access rules, read from the contract document the API serves. */
const ACCESS_POLICY: Record<string, AccessRule> = Object.fromEntries(
  contractOperations().flatMap((op) => (op.access ? [[op.operationId, op.access] as const] : [])),
);
const entries = Object.entries(ACCESS_POLICY);
const writes = entries.filter(([, rule]) => rule.write);
const reads = entries.filter(([, rule]) => !rule.write);

let app: App;

function send(operationId: string, orgId: string, token?: string) {
  const req = contractRequest(operationId, { orgId });
  let call = request(app)[req.method](req.url).set(req.headers);
  if (token) call = call.set(bearer(token));
  return req.body === undefined ? call : call.send(req.body as object);
}

/** The policy let the request through: whatever the handler (or the 501 fallback) answered. */
function expectPassedPolicy(res: request.Response): void {
  expect(res.status, JSON.stringify(res.body)).not.toBe(401);
  expect(res.status, JSON.stringify(res.body)).not.toBe(500);
  expect(POLICY_ERRORS).not.toContain(res.body.error);
  expect(res.body).not.toEqual(NOT_FOUND_BODY);
}

beforeAll(async () => {
  app = await buildTestApp();
});

describe('the x-access rules of the contract', () => {
  it('has a rule on every contract operation under /business/organizations/{orgId}, and only those', () => {
    const business = contractOperations().filter((op) => op.path.startsWith(`${BUSINESS_PREFIX}/`));
    expect(business.length).toBeGreaterThan(0);
    expect(business.map((op) => op.operationId).filter((id) => !(id in ACCESS_POLICY))).toEqual([]);
    const known = new Set(business.map((op) => op.operationId));
    expect(Object.keys(ACCESS_POLICY).filter((id) => !known.has(id))).toEqual([]);
  });

  it('keeps the spec role rules of the original Business routes', () => {
    const financial: Role[] = ['owner', 'admin', 'representative', 'director', 'finance_manager'];
    expect([...(ACCESS_POLICY.getOrCreateCheckout?.roles ?? [])].sort()).toEqual(['admin', 'finance_manager', 'owner']);
    expect(ACCESS_POLICY.getOrCreateCheckout).toMatchObject({ module: 'payment_links', write: true });
    for (const id of ['listPaymentLinks', 'listInvoices', 'listAccounts', 'getNetworkStatus']) {
      expect([...(ACCESS_POLICY[id]?.roles ?? [])].sort(), id).toEqual([...financial].sort());
    }
    expect([...(ACCESS_POLICY.updateNetworkStatus?.roles ?? [])].sort()).toEqual(['admin', 'owner']);
    expect(ACCESS_POLICY.updateNetworkStatus).toMatchObject({ module: 'network_status', requiresActiveOrg: true });
  });
});

describe('role-by-route matrix (every operation of the table, every role)', () => {
  let org: TestOrganization;
  const tokens = new Map<Role, string>();

  beforeAll(async () => {
    org = await createOrganization();
    for (const role of ROLES) tokens.set(role, await memberToken(app, org, role));
  });

  for (const [operationId, rule] of entries) {
    for (const role of ROLES) {
      const allowed = rule.roles.includes(role);
      it(`${operationId} as ${role}: ${allowed ? 'passes the policy' : '403 InsufficientRole'}`, async () => {
        const res = await send(operationId, org.id, tokens.get(role));
        if (allowed) {
          expectPassedPolicy(res);
        } else {
          expect(res.status).toBe(403);
          expect(res.body).toMatchObject({ success: false, error: 'InsufficientRole' });
        }
      });
    }
  }
});

describe('organisation membership: 404, and the same 404 whatever the reason', () => {
  for (const [operationId, rule] of entries) {
    const role = rule.roles[0] as Role;

    it(`${operationId}: foreign, non-existent and malformed orgId answer exactly alike`, async () => {
      const mine = await createOrganization();
      const foreign = await createOrganization();
      const token = await memberToken(app, mine, role);
      await createMember(foreign, 'owner');
      const foreignRes = await send(operationId, foreign.id, token);
      const missingRes = await send(operationId, crypto.randomUUID(), token);
      const malformedRes = await send(operationId, 'not-a-uuid', token);
      for (const res of [foreignRes, missingRes, malformedRes]) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual(NOT_FOUND_BODY);
      }
      expect(Object.keys(foreignRes.headers).sort()).toEqual(Object.keys(missingRes.headers).sort());
    });
  }

  it.each(['invited', 'suspended'] as const)('a %s membership is not an active one: 404', async (status) => {
    const org = await createOrganization();
    const user = await createUser();
    await addMember(org, user, 'owner', status);
    const token = await accessTokenFor(app, user);
    for (const [operationId] of entries) {
      const res = await send(operationId, org.id, token);
      expect(res.status, operationId).toBe(404);
      expect(res.body).toEqual(NOT_FOUND_BODY);
    }
  });

  it('without a token, 401 comes first, even for a malformed orgId', async () => {
    for (const [operationId] of entries) {
      for (const orgId of [crypto.randomUUID(), 'not-a-uuid']) {
        const res = await send(operationId, orgId);
        expect(res.status, operationId).toBe(401);
        expect(res.body.error).toBe('Unauthorized');
        expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
      }
    }
  });
});

describe('modules', () => {
  for (const [operationId, rule] of entries) {
    const role = rule.roles[0] as Role;

    it(`${operationId}: module ${rule.module} not enabled -> 403 FeatureUnavailable`, async () => {
      const org = await createOrganization({ modules: { [rule.module]: null } });
      const res = await send(operationId, org.id, await memberToken(app, org, role));
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ success: false, error: 'FeatureUnavailable' });
    });

    it(`${operationId}: a role outside the rule gets 403 InsufficientRole before FeatureUnavailable`, async () => {
      const denied = ROLES.find((r) => !rule.roles.includes(r));
      if (!denied) return;
      const org = await createOrganization({ modules: { [rule.module]: null } });
      const res = await send(operationId, org.id, await memberToken(app, org, denied));
      expect(res.status).toBe(403);
      expect(res.body.error).toBe('InsufficientRole');
    });
  }

  for (const [operationId, rule] of writes) {
    const role = rule.roles[0] as Role;
    it.each(['locked', 'read_only'] as const)(`${operationId}: a write to a %s module -> 423 ModuleLocked`, async (access) => {
      const org = await createOrganization({ modules: { [rule.module]: access } });
      const res = await send(operationId, org.id, await memberToken(app, org, role));
      expect(res.status).toBe(423);
      expect(res.body).toMatchObject({ success: false, error: 'ModuleLocked' });
    });
  }

  for (const [operationId, rule] of reads) {
    const role = rule.roles[0] as Role;
    it(`${operationId}: reading a locked module is allowed`, async () => {
      const org = await createOrganization({ modules: { [rule.module]: 'locked' } });
      expectPassedPolicy(await send(operationId, org.id, await memberToken(app, org, role)));
    });
  }
});

describe('organisation status', () => {
  for (const [operationId, rule] of entries) {
    const role = rule.roles[0] as Role;
    for (const status of ['inactive', 'suspended'] as const) {
      it(`${operationId} on a ${status} organisation: ${rule.requiresActiveOrg ? '422 OrganizationInactive' : 'passes the policy'}`, async () => {
        const org = await createOrganization({ status });
        const res = await send(operationId, org.id, await memberToken(app, org, role));
        if (rule.requiresActiveOrg) {
          expect(res.status).toBe(422);
          expect(res.body).toMatchObject({ success: false, error: 'OrganizationInactive' });
        } else {
          expectPassedPolicy(res);
        }
      });
    }
  }
});
