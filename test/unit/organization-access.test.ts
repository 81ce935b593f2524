import crypto from 'node:crypto';
import type { Request, Response } from 'express';
import { describe, expect, it, vi } from 'vitest';
import { organizationAccessCheck } from '../../src/http/mount-operations';
import { accessRuleFor, OrganizationAccessService } from '../../src/modules/organizations';
import { testKnex } from '../support/database';
import { addMember, createMember, createOrganization, createUser } from '../support/factories';

function fakeRequest(orgId: string, auth = true): Request {
  return {
    params: { orgId },
    auth: auth ? { userId: crypto.randomUUID(), sessionId: crypto.randomUUID(), isAdmin: false } : undefined,
    log: { error: vi.fn() },
  } as unknown as Request;
}

describe('organisation access check of the mount', () => {
  it('fails closed for a Business operation without an x-access rule, and logs why', async () => {
    const authorize = vi.fn();
    const middleware = organizationAccessCheck('someNewBusinessOperation', { authorize } as unknown as OrganizationAccessService);
    const req = fakeRequest(crypto.randomUUID());
    const next = vi.fn();
    await expect(Promise.resolve(middleware(req, {} as Response, next))).rejects.toThrow(/no access rule/);
    expect(next).not.toHaveBeenCalled();
    expect(authorize).not.toHaveBeenCalled();
    expect((req.log.error as unknown as ReturnType<typeof vi.fn>).mock.calls[0]?.[0]).toEqual({ operationId: 'someNewBusinessOperation' });
  });

  it('refuses a request without an authenticated caller', async () => {
    const authorize = vi.fn();
    const middleware = organizationAccessCheck('listInvoices', { authorize } as unknown as OrganizationAccessService);
    const next = vi.fn();
    await expect(Promise.resolve(middleware(fakeRequest(crypto.randomUUID(), false), {} as Response, next))).rejects.toMatchObject({ code: 'Unauthorized' });
    expect(next).not.toHaveBeenCalled();
    expect(authorize).not.toHaveBeenCalled();
  });

  it('resolves organisation, membership and modules in one query', async () => {
    const org = await createOrganization({ modules: { invoices: 'read_only', accounts: null } });
    const user = await createMember(org, 'director');
    const service = new OrganizationAccessService(testKnex());
    const queries: string[] = [];
    const listener = (q: { sql: string }) => queries.push(q.sql);
    testKnex().on('query', listener);
    try {
      const context = await service.authorize(org.id, user.id, accessRuleFor('listInvoices')!);
      expect(context).toEqual({
        id: org.id,
        name: org.name,
        status: 'active',
        role: 'director',
        moduleAccess: { payment_links: 'open', invoices: 'read_only', network_status: 'open' },
      });
    } finally {
      testKnex().off('query', listener);
    }
    expect(queries).toHaveLength(1);
  });

  it("lists the organisations where a user is an active member, by name, with the user's role", async () => {
    const user = await createUser();
    const beta = await createOrganization({ name: `Beta ${crypto.randomUUID().slice(0, 8)}`, status: 'inactive' });
    const alpha = await createOrganization({ name: `Alpha ${crypto.randomUUID().slice(0, 8)}` });
    const invited = await createOrganization();
    await addMember(beta, user, 'cashier');
    await addMember(alpha, user, 'owner');
    await addMember(invited, user, 'admin', 'invited');
    expect(await new OrganizationAccessService(testKnex()).activeOrganizationsOf(user.id)).toEqual([
      { id: alpha.id, name: alpha.name, status: 'active', role: 'owner' },
      { id: beta.id, name: beta.name, status: 'inactive', role: 'cashier' },
    ]);
  });
});
