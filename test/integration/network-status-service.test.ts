import { describe, expect, it, vi } from 'vitest';
import { ValidationError } from '../../src/errors';
import { NetworkStatusService, isStoreTimeout } from '../../src/modules/network-status';
import { testKnex } from '../support/database';
import { createMember, createOrganization } from '../support/factories';
import { failure } from '../support/failures';

/**
 * The network-status service called directly (the HTTP layer's contract validation stops
 * most bad input before it): its own guard, who may manage, the timeouts it sets and how it
 * maps store errors. Expectations are written out from the contract, not read from the code.
 */
const knex = testKnex();


describe('NetworkStatusService.update guard', () => {
  it('refuses a version that is not an integer from 0 to 2147483646, changing nothing', async () => {
    const org = await createOrganization();
    const owner = await createMember(org, 'owner');
    const service = new NetworkStatusService(knex);
    const caller = { id: org.id, status: 'active', role: 'owner' as const };
    for (const version of [-1, 2_147_483_647, 1.5, Number.NaN]) {
      const error = await failure(service.update(caller, owner.id, { version, isOpen: true }, null));
      expect(error, String(version)).toBeInstanceOf(ValidationError);
      expect(error.message).toBe('version must be an integer from 0 to 2147483646.');
      expect(error.details).toEqual([{ field: 'body.version', message: 'version must be an integer from 0 to 2147483646.' }]);
    }
    expect(await knex('network_status_changes').where({ organization_id: org.id }).first()).toBeUndefined();
    const changed = await service.update(caller, owner.id, { version: 0, isOpen: true }, 'req-1');
    expect(changed).toMatchObject({ version: 1, isOpen: true, canManage: true });
  });

  it('sets the lock and statement timeouts it was given for the change, in milliseconds', async () => {
    const org = await createOrganization();
    const owner = await createMember(org, 'owner');
    const service = new NetworkStatusService(knex, { lockTimeoutMs: 1234, statementTimeoutMs: 5678 });
    const bindings: unknown[][] = [];
    const listener = (query: { sql: string; bindings?: unknown[] }) => {
      if (query.sql.includes('set_config')) bindings.push(query.bindings ?? []);
    };
    knex.on('query', listener);
    try {
      await service.update({ id: org.id, status: 'active', role: 'owner' }, owner.id, { version: 0, isOpen: false }, null);
    } finally {
      knex.off('query', listener);
    }
    expect(bindings).toEqual([['lock_timeout', '1234ms', 'statement_timeout', '5678ms']]);
  });

  it('by default 2 s for the lock, 5 s for a statement and Retry-After 1 s', async () => {
    const org = await createOrganization();
    const owner = await createMember(org, 'owner');
    const bindings: unknown[][] = [];
    const listener = (query: { sql: string; bindings?: unknown[] }) => {
      if (query.sql.includes('set_config')) bindings.push(query.bindings ?? []);
    };
    knex.on('query', listener);
    try {
      await new NetworkStatusService(knex, {}).update({ id: org.id, status: 'active', role: 'admin' }, owner.id, { version: 0, isOpen: true }, null);
    } finally {
      knex.off('query', listener);
    }
    expect(bindings).toEqual([['lock_timeout', '2000ms', 'statement_timeout', '5000ms']]);
    const timingOut = { transaction: () => Promise.reject(Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' })) };
    const error = await failure(new NetworkStatusService(timingOut as never).update({ id: org.id, status: 'active', role: 'owner' }, owner.id, { version: 1, isOpen: true }, null));
    expect({ code: error.code, headers: error.headers }).toEqual({ code: 'StatusUnavailable', headers: { 'Retry-After': '1' } });
  });

  it('never retries a change: a serialization failure or a deadlock is answered at once', async () => {
    for (const code of ['40001', '40P01']) {
      const conflict = Object.assign(new Error('could not serialize access'), { code });
      const transaction = vi.fn(() => Promise.reject(conflict));
      const service = new NetworkStatusService({ transaction } as never);
      expect(await failure(service.update({ id: 'x', status: 'active', role: 'owner' }, 'u', { version: 0, isOpen: true }, null))).toBe(conflict);
      expect(transaction).toHaveBeenCalledTimes(1);
    }
  });

  it('passes any other store error through unchanged', async () => {
    const broken = Object.assign(new Error('duplicate key'), { code: '23505' });
    const service = new NetworkStatusService({ transaction: () => Promise.reject(broken) } as never, { retryAfterSeconds: 3 });
    expect(await failure(service.update({ id: 'x', status: 'active', role: 'owner' }, 'u', { version: 0, isOpen: true }, null))).toBe(broken);
  });

  it('is not a store timeout: nothing, or an error without code or name', () => {
    expect(isStoreTimeout(null)).toBe(false);
    expect(isStoreTimeout(undefined)).toBe(false);
    expect(isStoreTimeout({})).toBe(false);
    expect(isStoreTimeout({ code: '40001', name: 'Error' })).toBe(false);
  });
});

describe('NetworkStatusService.canManage', () => {
  it('owners and admins of an active organisation only', () => {
    const service = new NetworkStatusService(knex);
    expect(service.canManage({ id: 'o', status: 'active', role: 'owner' })).toBe(true);
    expect(service.canManage({ id: 'o', status: 'active', role: 'admin' })).toBe(true);
    for (const role of ['representative', 'director', 'finance_manager', 'cashier'] as const) {
      expect(service.canManage({ id: 'o', status: 'active', role }), role).toBe(false);
    }
    for (const status of ['inactive', 'suspended']) {
      expect(service.canManage({ id: 'o', status, role: 'owner' }), status).toBe(false);
    }
  });

  it('is part of what get and update answer', async () => {
    const org = await createOrganization();
    const owner = await createMember(org, 'owner');
    const service = new NetworkStatusService(knex);
    expect(await service.get({ id: org.id, status: 'active', role: 'finance_manager' })).toMatchObject({ version: 0, canManage: false });
    expect(await service.get({ id: org.id, status: 'active', role: 'owner' })).toMatchObject({ version: 0, canManage: true });
    expect(await service.update({ id: org.id, status: 'active', role: 'owner' }, owner.id, { version: 0, isOpen: true }, null)).toMatchObject({ version: 1, isOpen: true, canManage: true });
  });
});
