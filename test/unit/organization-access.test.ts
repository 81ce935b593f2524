import crypto from 'node:crypto';
import type { Request, Response } from 'express';
import { describe, expect, it, vi } from 'vitest';
import { organizationAccess } from '../../src/modules/organizations/organization-access';
import { OrganizationAccessService } from '../../src/modules/organizations/organization-access-service';
import { ACCESS_POLICY } from '../../src/modules/organizations/access-policy';
import { testKnex } from '../support/database';
import { createMember, createOrganization } from '../support/factories';

function fakeRequest(operationId: string | undefined, orgId: string): Request {
  return {
    openapi: operationId ? { schema: { operationId }, pathParams: { orgId } } : undefined,
    params: { orgId },
    auth: { userId: crypto.randomUUID(), sessionId: crypto.randomUUID(), isAdmin: false },
    log: { error: vi.fn() },
  } as unknown as Request;
}

describe('organisation access middleware', () => {
  it('fails closed for a Business operation missing from ACCESS_POLICY, and logs why', async () => {
    const authorize = vi.fn();
    const middleware = organizationAccess({ authorize } as unknown as OrganizationAccessService);
    const req = fakeRequest('someNewBusinessOperation', crypto.randomUUID());
    const next = vi.fn();
    await expect(Promise.resolve(middleware(req, {} as Response, next))).rejects.toThrow(/no access rule/);
    expect(next).not.toHaveBeenCalled();
    expect(authorize).not.toHaveBeenCalled();
    expect((req.log.error as unknown as ReturnType<typeof vi.fn>).mock.calls[0]?.[0]).toEqual({ operationId: 'someNewBusinessOperation' });
  });

  it('refuses a request no contract operation matched', async () => {
    const middleware = organizationAccess({ authorize: vi.fn() } as unknown as OrganizationAccessService);
    const next = vi.fn();
    await expect(Promise.resolve(middleware(fakeRequest(undefined, crypto.randomUUID()), {} as Response, next))).rejects.toMatchObject({ code: 'NotFound' });
    expect(next).not.toHaveBeenCalled();
  });

  it('resolves organisation, membership and modules in one query', async () => {
    const org = await createOrganization({ modules: { invoices: 'read_only', accounts: null } });
    const user = await createMember(org, 'director');
    const service = new OrganizationAccessService(testKnex());
    const queries: string[] = [];
    const listener = (q: { sql: string }) => queries.push(q.sql);
    testKnex().on('query', listener);
    try {
      const context = await service.authorize(org.id, user.id, ACCESS_POLICY.listInvoices!);
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
});
