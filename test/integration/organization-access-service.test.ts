import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AccessRule } from '../../src/contract';
import { OrganizationAccessService } from '../../src/modules/organizations';
import { testKnex } from '../support/database';
import { addMember, createMember, createOrganization, createUser } from '../support/factories';

/**
 * OrganizationAccessService.authorize on its own, with rules written out here (not read from
 * the contract): each check, in the order the spec gives, and the exact refusal.
 */
const service = new OrganizationAccessService(testKnex());

const READ_INVOICES: AccessRule = { roles: ['owner', 'admin', 'director'], module: 'invoices', scope: 'invoices:read', write: false, requiresActiveOrg: false };
const WRITE_INVOICES: AccessRule = { roles: ['owner', 'finance_manager'], module: 'invoices', scope: 'invoices:write', write: true, requiresActiveOrg: false };
const ACTIVE_ONLY: AccessRule = { roles: ['owner'], module: 'network_status', scope: 'network_status:write', write: false, requiresActiveOrg: true };

const NOT_FOUND = { code: 'NotFound', category: 'not_found', message: 'Organization not found.' };
const INSUFFICIENT_ROLE = { code: 'InsufficientRole', category: 'forbidden', message: 'Your role in this organisation does not allow this operation.' };

async function refusal(promise: Promise<unknown>): Promise<{ code: string; category: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    const { code, category, message } = error as { code: string; category: string; message: string };
    return { code, category, message };
  }
  throw new Error('expected a refusal');
}

describe('OrganizationAccessService.authorize', () => {
  it('an active member with an allowed role gets the organisation, its role and its modules', async () => {
    const org = await createOrganization({ modules: { accounts: null, payment_links: 'locked' } });
    const director = await createMember(org, 'director');
    expect(await service.authorize(org.id, director.id, READ_INVOICES)).toEqual({
      id: org.id,
      name: org.name,
      status: 'active',
      role: 'director',
      moduleAccess: { invoices: 'open', payment_links: 'locked', network_status: 'open' },
    });
    // The organisation id is read in any case.
    expect((await service.authorize(org.id.toUpperCase(), director.id, READ_INVOICES)).id).toBe(org.id);
  });

  it('404 for an id that is not a UUID, an unknown organisation, a stranger or a member who is not active', async () => {
    const org = await createOrganization();
    const owner = await createMember(org, 'owner');
    const invited = await createUser();
    await addMember(org, invited, 'owner', 'invited');
    const stranger = await createUser();
    expect(await refusal(service.authorize('not-a-uuid', owner.id, READ_INVOICES))).toEqual(NOT_FOUND);
    expect(await refusal(service.authorize(`${org.id}x`, owner.id, READ_INVOICES))).toEqual(NOT_FOUND);
    expect(await refusal(service.authorize(crypto.randomUUID(), owner.id, READ_INVOICES))).toEqual(NOT_FOUND);
    expect(await refusal(service.authorize(org.id, stranger.id, READ_INVOICES))).toEqual(NOT_FOUND);
    expect(await refusal(service.authorize(org.id, invited.id, READ_INVOICES))).toEqual(NOT_FOUND);
  });

  it('403 InsufficientRole for a role outside the rule, before anything about modules or status', async () => {
    const org = await createOrganization({ status: 'inactive', modules: { invoices: null } });
    const cashier = await createMember(org, 'cashier');
    expect(await refusal(service.authorize(org.id, cashier.id, READ_INVOICES))).toEqual(INSUFFICIENT_ROLE);
    expect(await refusal(service.authorize(org.id, cashier.id, WRITE_INVOICES))).toEqual(INSUFFICIENT_ROLE);
  });

  it('403 FeatureUnavailable when the module is not enabled, naming it', async () => {
    const org = await createOrganization({ status: 'inactive', modules: { invoices: null, network_status: null } });
    const owner = await createMember(org, 'owner');
    expect(await refusal(service.authorize(org.id, owner.id, WRITE_INVOICES))).toEqual({
      code: 'FeatureUnavailable',
      category: 'forbidden',
      message: 'The invoices feature is not available for this organisation.',
    });
    expect((await refusal(service.authorize(org.id, owner.id, ACTIVE_ONLY))).message).toBe('The network status feature is not available for this organisation.');
  });

  it('423 ModuleLocked for a write to a read-only or locked module; reads pass', async () => {
    for (const access of ['read_only', 'locked'] as const) {
      const org = await createOrganization({ status: 'inactive', modules: { invoices: access } });
      const owner = await createMember(org, 'owner');
      expect(await refusal(service.authorize(org.id, owner.id, WRITE_INVOICES)), access).toEqual({
        code: 'ModuleLocked',
        category: 'locked',
        message: 'The invoices module is locked for changes in this organisation.',
      });
      expect((await service.authorize(org.id, owner.id, READ_INVOICES)).moduleAccess.invoices).toBe(access);
    }
  });

  it('422 OrganizationInactive when the rule needs an active organisation; other rules pass', async () => {
    for (const status of ['inactive', 'suspended'] as const) {
      const org = await createOrganization({ status });
      const owner = await createMember(org, 'owner');
      expect(await refusal(service.authorize(org.id, owner.id, ACTIVE_ONLY)), status).toEqual({
        code: 'OrganizationInactive',
        category: 'unprocessable',
        message: 'The organisation is not active: this change is not allowed.',
      });
      expect((await service.authorize(org.id, owner.id, WRITE_INVOICES)).status).toBe(status);
    }
    const active = await createOrganization();
    const owner = await createMember(active, 'owner');
    expect((await service.authorize(active.id, owner.id, ACTIVE_ONLY)).status).toBe('active');
  });
});
