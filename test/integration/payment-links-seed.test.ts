import { describe, expect, it } from 'vitest';
import { seedOrganizationAccounts } from '../../src/seed/accounts-seed';
import { findDemoOrganizationId, seedIdentity } from '../../src/seed/identity-seed';
import { seedPaymentLinks } from '../../src/seed/payment-links-seed';
import { inRolledBackSeed } from '../support/seed';

describe('payment links demo seed step', () => {
  it('gives "Demo Trading SARL" a Checkout per XOF and EUR account and two one-off links (rolled back afterwards)', async () => {
    await inRolledBackSeed([seedIdentity, seedOrganizationAccounts, seedPaymentLinks], async (trx) => {
      const orgId = await findDemoOrganizationId(trx);
      const links = (await trx('payment_links').where({ organization_id: orgId }).select('kind', 'currency', 'amount_minor', 'status', 'require_signed_amount')) as Array<{
        kind: string;
        currency: string;
        amount_minor: string | null;
        status: string;
        require_signed_amount: boolean;
      }>;
      expect(links.filter((l) => l.kind === 'checkout').map((l) => `${l.currency}:${l.require_signed_amount}`).sort()).toEqual(['EUR:true', 'XOF:false']);
      expect(links.filter((l) => l.kind === 'link').map((l) => l.amount_minor).sort()).toEqual(['15000', null].sort());
      expect(links.every((l) => l.status === 'active')).toBe(true);
    });
  });
});
