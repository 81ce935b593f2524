import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { contractOperations, contractRequest, withContractBody } from '../support/contract-requests';
import {
  accessTokenFor,
  addMember,
  bearer,
  createMember,
  createOrganization,
  createUser,
  memberToken,
  type ModuleName,
  type Role,
  type TestOrganization,
} from '../support/factories';

const BUSINESS_PREFIX = '/business/organizations/{orgId}';
const NOT_FOUND_BODY = {
  success: false,
  error: 'NotFound',
  message: 'Organization not found.',
};
const POLICY_ERRORS = ['InsufficientRole', 'FeatureUnavailable', 'ModuleLocked', 'OrganizationInactive'];

/**
 * The access rules of every Business operation, written out from the spec
 * (/work/shared/spec/platform-api.md: "financial role", "owner, admin or finance_manager",
 * "any active member except cashier staff", "owner or admin member") and the contract's
 * operation descriptions, independently of the code that enforces them.
 *   roles:  one column per role; OK passes the access checks, 403 is InsufficientRole
 *   module: must be enabled (403 FeatureUnavailable otherwise)
 *   write:  refused with 423 ModuleLocked while the module is locked or read-only
 *   active: refused with 422 OrganizationInactive while the organisation is not active
 */
const OK = 'OK';
const NO = 403;
const ROLE_COLUMNS = ['owner', 'admin', 'representative', 'director', 'finance_manager', 'cashier'] as const;
type Outcome = typeof OK | typeof NO;
interface SpecRule {
  /** null: the operation belongs to no module (API keys, events, webhooks): nothing to enable or lock. */
  module: ModuleName | null;
  write: boolean;
  active: boolean;
  roles: [Outcome, Outcome, Outcome, Outcome, Outcome, Outcome];
}
const READ = { write: false, active: false };
const WRITE = { write: true, active: false };
const WRITE_ACTIVE = { write: true, active: true };
const ACTIVE_ONLY = { write: false, active: true };

// prettier-ignore
const SPEC_RULES: Record<string, SpecRule> = {
  //                                                                    owner admin repr director finance cashier
  getOrCreateCheckout:      { module: 'payment_links', ...WRITE_ACTIVE, roles: [OK, OK, NO, NO, OK, NO] },
  listPaymentLinks:         { module: 'payment_links', ...READ,         roles: [OK, OK, OK, OK, OK, NO] },
  createPaymentLink:        { module: 'payment_links', ...WRITE_ACTIVE, roles: [OK, OK, NO, NO, OK, NO] },
  getPaymentLink:           { module: 'payment_links', ...READ,         roles: [OK, OK, OK, OK, OK, NO] },
  deactivatePaymentLink:    { module: 'payment_links', ...WRITE_ACTIVE, roles: [OK, OK, NO, NO, OK, NO] },
  createSignedPaymentLink:  { module: 'payment_links', ...WRITE_ACTIVE, roles: [OK, OK, NO, NO, OK, NO] },
  listPayments:             { module: 'payment_links', ...READ,         roles: [OK, OK, OK, OK, OK, NO] },
  getPayment:               { module: 'payment_links', ...READ,         roles: [OK, OK, OK, OK, OK, NO] },
  listPaymentRefunds:       { module: 'payment_links', ...READ,         roles: [OK, OK, OK, OK, OK, NO] },
  createPaymentRefund:      { module: 'payment_links', ...WRITE,        roles: [OK, OK, NO, NO, OK, NO] },
  listPayouts:              { module: 'accounts',      ...READ,         roles: [OK, OK, OK, OK, OK, NO] },
  getPayout:                { module: 'accounts',      ...READ,         roles: [OK, OK, OK, OK, OK, NO] },
  createPayout:             { module: 'accounts',      ...WRITE,        roles: [OK, OK, NO, NO, OK, NO] },
  approvePayout:            { module: 'accounts',      ...WRITE,        roles: [OK, OK, NO, NO, NO, NO] },
  cancelPayout:             { module: 'accounts',      ...WRITE,        roles: [OK, OK, NO, NO, OK, NO] },
  getOrganizationLimits:    { module: 'accounts',      ...READ,         roles: [OK, OK, OK, OK, OK, NO] },
  // Stablecoins of the organisation: read by every member but cashier staff, converted by those who move money.
  listOrganizationCryptoBalances:     { module: 'accounts', ...READ,  roles: [OK, OK, OK, OK, OK, NO] },
  listOrganizationCryptoConversions:  { module: 'accounts', ...READ,  roles: [OK, OK, OK, OK, OK, NO] },
  getOrganizationCryptoConversion:    { module: 'accounts', ...READ,  roles: [OK, OK, OK, OK, OK, NO] },
  createOrganizationCryptoQuote:      { module: 'accounts', ...WRITE, roles: [OK, OK, NO, NO, OK, NO] },
  createOrganizationCryptoConversion: { module: 'accounts', ...WRITE, roles: [OK, OK, NO, NO, OK, NO] },
  getPayoutSettings:        { module: 'accounts',      ...READ,         roles: [OK, OK, OK, OK, OK, NO] },
  updatePayoutSettings:     { module: 'accounts',      ...WRITE,        roles: [OK, NO, NO, NO, NO, NO] },
  listInvoices:             { module: 'invoices',      ...READ,         roles: [OK, OK, OK, OK, OK, NO] },
  getInvoice:               { module: 'invoices',      ...READ,         roles: [OK, OK, OK, OK, OK, NO] },
  createInvoice:            { module: 'invoices',      ...WRITE,        roles: [OK, OK, NO, NO, OK, NO] },
  finalizeInvoice:          { module: 'invoices',      ...WRITE,        roles: [OK, OK, NO, NO, OK, NO] },
  payInvoice:               { module: 'invoices',      ...WRITE,        roles: [OK, OK, NO, NO, OK, NO] },
  markInvoiceUncollectible: { module: 'invoices',      ...WRITE,        roles: [OK, OK, NO, NO, OK, NO] },
  voidInvoice:              { module: 'invoices',      ...WRITE,        roles: [OK, OK, NO, NO, OK, NO] },
  acceptQuote:              { module: 'invoices',      ...WRITE,        roles: [OK, OK, NO, NO, OK, NO] },
  cancelQuote:              { module: 'invoices',      ...WRITE,        roles: [OK, OK, NO, NO, OK, NO] },
  createCreditNote:         { module: 'invoices',      ...WRITE,        roles: [OK, OK, NO, NO, OK, NO] },
  createCustomer:           { module: 'invoices',      ...WRITE,        roles: [OK, OK, NO, NO, OK, NO] },
  listAccounts:             { module: 'accounts',      ...READ,         roles: [OK, OK, OK, OK, OK, NO] },
  getAccountStatement:      { module: 'accounts',      ...READ,         roles: [OK, OK, OK, OK, OK, NO] },
  getNetworkStatus:         { module: 'network_status', ...READ,        roles: [OK, OK, OK, OK, OK, NO] },
  // The spec gives the PATCH no 423 (no module lock) but 422 for an inactive organisation.
  updateNetworkStatus:      { module: 'network_status', ...ACTIVE_ONLY, roles: [OK, OK, NO, NO, NO, NO] },
  getNetworkStatusHistory:  { module: 'network_status', ...READ,        roles: [OK, OK, NO, NO, NO, NO] },
  // The organisation's API keys are managed by its owner or admin, whatever its modules.
  listApiKeys:              { module: null,            ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  createApiKey:             { module: null,            ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  getApiKey:                { module: null,            ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  revokeApiKey:             { module: null,            ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  rollApiKey:               { module: null,            ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  // Events (owner, admin, finance_manager) and webhook endpoints (owner or admin).
  listOrganizationEvents:   { module: null,            ...READ,         roles: [OK, OK, NO, NO, OK, NO] },
  getOrganizationEvent:     { module: null,            ...READ,         roles: [OK, OK, NO, NO, OK, NO] },
  listWebhookEndpoints:     { module: null,            ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  createWebhookEndpoint:    { module: null,            ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  getWebhookEndpoint:       { module: null,            ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  updateWebhookEndpoint:    { module: null,            ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  deleteWebhookEndpoint:    { module: null,            ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  rotateWebhookEndpointSecret: { module: null,         ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  testWebhookEndpoint:      { module: null,            ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  listWebhookDeliveries:    { module: null,            ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  retryWebhookDelivery:     { module: null,            ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  // Members and invitations: listed by every member but cashier staff, managed by owners and admins;
  // any member may call the removal (to leave), the service then limits removing others.
  listOrganizationMembers:  { module: null,            ...READ,         roles: [OK, OK, OK, OK, OK, NO] },
  updateOrganizationMember: { module: null,            ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  removeOrganizationMember: { module: null,            ...READ,         roles: [OK, OK, OK, OK, OK, OK] },
  listOrganizationInvitations: { module: null,         ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  createOrganizationInvitation: { module: null,        ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  revokeOrganizationInvitation: { module: null,        ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  transferApiKey:           { module: null,            ...READ,         roles: [OK, OK, NO, NO, NO, NO] },
  // Business verification is submitted by the owner.
  submitOrganizationVerification: { module: null,      ...READ,         roles: [OK, NO, NO, NO, NO, NO] },
};

const outcomeOf = (rule: SpecRule, role: Role): Outcome => rule.roles[ROLE_COLUMNS.indexOf(role)] as Outcome;
const allowedRoles = (rule: SpecRule): Role[] => ROLE_COLUMNS.filter((role) => outcomeOf(rule, role) === OK);
const deniedRoles = (rule: SpecRule): Role[] => ROLE_COLUMNS.filter((role) => outcomeOf(rule, role) === NO);

const entries = Object.entries(SPEC_RULES);
/** Operations of a module (all but the API key routes). */
const inModule = entries.filter((entry): entry is [string, SpecRule & { module: ModuleName }] => entry[1].module !== null);
const writes = inModule.filter(([, rule]) => rule.write);
const reads = inModule.filter(([, rule]) => !rule.write);

let app: App;

function send(operationId: string, orgId: string, token?: string) {
  const req = contractRequest(operationId, { orgId });
  let call = request(app)[req.method](req.url).set(req.headers);
  if (token) call = call.set(bearer(token));
  return withContractBody(call, req);
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

describe('the access rules table', () => {
  it('has a rule for every contract operation under /business/organizations/{orgId}, and only those', () => {
    const business = contractOperations().filter((op) => op.path.startsWith(`${BUSINESS_PREFIX}/`));
    expect(business.length).toBeGreaterThan(0);
    expect(business.map((op) => op.operationId).filter((id) => !(id in SPEC_RULES))).toEqual([]);
    const known = new Set(business.map((op) => op.operationId));
    expect(Object.keys(SPEC_RULES).filter((id) => !known.has(id))).toEqual([]);
  });

  it('applies the checks in the spec order: role, then module, then lock, then organisation status', async () => {
    const operationId = 'createPaymentLink';
    const dormant = await createOrganization({ status: 'inactive', modules: { payment_links: null } });
    const cashier = await memberToken(app, dormant, 'cashier');
    const finance = await memberToken(app, dormant, 'finance_manager');
    let res = await send(operationId, dormant.id, cashier);
    expect([res.status, res.body.error]).toEqual([403, 'InsufficientRole']);
    res = await send(operationId, dormant.id, finance);
    expect([res.status, res.body.error]).toEqual([403, 'FeatureUnavailable']);
    const lockedDormant = await createOrganization({ status: 'inactive', modules: { payment_links: 'locked' } });
    res = await send(operationId, lockedDormant.id, await memberToken(app, lockedDormant, 'admin'));
    expect([res.status, res.body.error]).toEqual([423, 'ModuleLocked']);
    const openDormant = await createOrganization({ status: 'inactive' });
    res = await send(operationId, openDormant.id, await memberToken(app, openDormant, 'owner'));
    expect([res.status, res.body.error]).toEqual([422, 'OrganizationInactive']);
  });
});

describe('role-by-route matrix (every operation of the table, every role)', () => {
  let org: TestOrganization;
  const tokens = new Map<Role, string>();

  beforeAll(async () => {
    org = await createOrganization();
    for (const role of ROLE_COLUMNS) tokens.set(role, await memberToken(app, org, role));
  });

  for (const [operationId, rule] of entries) {
    for (const role of ROLE_COLUMNS) {
      const allowed = outcomeOf(rule, role) === OK;
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
    const role = allowedRoles(rule)[0] as Role;

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

  it('reads the orgId as a whole UUID in any case: anything around it is a 404', async () => {
    const org = await createOrganization();
    const token = await memberToken(app, org, 'owner');
    const upper = await send('listPaymentLinks', org.id.toUpperCase(), token);
    expect(upper.status, JSON.stringify(upper.body)).toBe(200);
    for (const orgId of [`x${org.id}`, `${org.id}x`, `${org.id}0`, org.id.slice(1), org.id.replace(/-/g, '')]) {
      const res = await send('listPaymentLinks', orgId, token);
      expect(res.status, orgId).toBe(404);
      expect(res.body, orgId).toEqual(NOT_FOUND_BODY);
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
  for (const [operationId, rule] of inModule) {
    const role = allowedRoles(rule)[0] as Role;

    it(`${operationId}: module ${rule.module} not enabled -> 403 FeatureUnavailable`, async () => {
      const org = await createOrganization({ modules: { [rule.module]: null } });
      const res = await send(operationId, org.id, await memberToken(app, org, role));
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ success: false, error: 'FeatureUnavailable' });
    });

    it(`${operationId}: a role outside the rule gets 403 InsufficientRole before FeatureUnavailable`, async () => {
      const denied = deniedRoles(rule)[0] as Role;
      expect(deniedRoles(rule).length).toBeGreaterThan(0);
      const org = await createOrganization({ modules: { [rule.module]: null } });
      const res = await send(operationId, org.id, await memberToken(app, org, denied));
      expect(res.status).toBe(403);
      expect(res.body.error).toBe('InsufficientRole');
    });
  }

  for (const [operationId, rule] of writes) {
    const role = allowedRoles(rule)[0] as Role;
    it.each(['locked', 'read_only'] as const)(`${operationId}: a write to a %s module -> 423 ModuleLocked`, async (access) => {
      const org = await createOrganization({ modules: { [rule.module]: access } });
      const res = await send(operationId, org.id, await memberToken(app, org, role));
      expect(res.status).toBe(423);
      expect(res.body).toMatchObject({ success: false, error: 'ModuleLocked' });
    });
  }

  for (const [operationId, rule] of reads) {
    const role = allowedRoles(rule)[0] as Role;
    it(`${operationId}: reading a locked module is allowed`, async () => {
      const org = await createOrganization({ modules: { [rule.module]: 'locked' } });
      expectPassedPolicy(await send(operationId, org.id, await memberToken(app, org, role)));
    });
  }
});

describe('organisation status', () => {
  for (const [operationId, rule] of entries) {
    const role = allowedRoles(rule)[0] as Role;
    for (const status of ['inactive', 'suspended'] as const) {
      it(`${operationId} on a ${status} organisation: ${rule.active ? '422 OrganizationInactive' : 'passes the policy'}`, async () => {
        const org = await createOrganization({ status });
        const res = await send(operationId, org.id, await memberToken(app, org, role));
        if (rule.active) {
          expect(res.status).toBe(422);
          expect(res.body).toMatchObject({ success: false, error: 'OrganizationInactive' });
        } else {
          expectPassedPolicy(res);
        }
      });
    }
  }
});
