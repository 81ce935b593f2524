import { describe, expect, it } from 'vitest';
import { accessRuleFor, roleAllowed } from '../../src/modules/organizations';

// Expected rules written out from the spec (see the table in test/api/access-policy.test.ts),
// not read from the contract's operation map.
describe('access rules lookup', () => {
  it('returns the rule of a Business operation', () => {
    expect(accessRuleFor('createInvoice')).toEqual({ roles: ['owner', 'admin', 'finance_manager'], module: 'invoices', scope: 'invoices:write', write: true, requiresActiveOrg: false });
    expect(accessRuleFor('updateNetworkStatus')).toEqual({ roles: ['owner', 'admin'], module: 'network_status', scope: 'network_status:write', write: false, requiresActiveOrg: true });
  });

  it('has no rule for an operation outside the Business area, an unknown one, or a name every object has', () => {
    expect(accessRuleFor('createTransfer')).toBeUndefined();
    expect(accessRuleFor('someNewBusinessOperation')).toBeUndefined();
    for (const name of ['toString', 'constructor', 'hasOwnProperty', '__proto__', 'valueOf']) {
      expect(accessRuleFor(name), name).toBeUndefined();
    }
  });

  it('says whether a role may call an operation', () => {
    expect(roleAllowed('updateNetworkStatus', 'owner')).toBe(true);
    expect(roleAllowed('updateNetworkStatus', 'admin')).toBe(true);
    expect(roleAllowed('updateNetworkStatus', 'finance_manager')).toBe(false);
    expect(roleAllowed('updateNetworkStatus', 'cashier')).toBe(false);
    expect(roleAllowed('listInvoices', 'director')).toBe(true);
    expect(roleAllowed('listInvoices', 'cashier')).toBe(false);
    // No rule: nobody, rather than an error.
    expect(roleAllowed('createTransfer', 'owner')).toBe(false);
  });
});
