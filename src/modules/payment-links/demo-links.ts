import type { Knex } from 'knex';
import { generateLinkCode } from './link-security';
import { PaymentLinksRepository } from './payment-links-repository';

export interface DemoLinkAccounts {
  organizationId: string;
  createdBy: string | null;
  xof: { id: string; currency: string };
  eur: { id: string; currency: string };
}

/**
 * Demo data (src/seed/): the Checkout of the XOF account and of the EUR account (signed amounts
 * required), a one-off link with a fixed amount and one with a customer-chosen amount, written
 * in the caller's transaction.
 */
export async function insertDemoLinks(trx: Knex.Transaction, { organizationId, createdBy, xof, eur }: DemoLinkAccounts): Promise<void> {
  const base = { organizationId, createdBy };
  const links = new PaymentLinksRepository(trx);
  await links.insertCheckoutIfAbsent({ ...base, kind: 'checkout', code: generateLinkCode(), destinationAccountId: xof.id, currency: xof.currency });
  await links.insertCheckoutIfAbsent({
    ...base,
    kind: 'checkout',
    code: generateLinkCode(),
    destinationAccountId: eur.id,
    currency: eur.currency,
    requireSignedAmount: true,
  });
  await links.insertLink({
    ...base,
    kind: 'link',
    code: generateLinkCode(),
    destinationAccountId: xof.id,
    currency: xof.currency,
    amountMinor: 15_000n,
    description: 'Delivery fee',
    reference: 'ORDER-2001',
    expiresAt: new Date(Date.now() + 30 * 86_400_000),
  });
  await links.insertLink({
    ...base,
    kind: 'link',
    code: generateLinkCode(),
    destinationAccountId: xof.id,
    currency: xof.currency,
    minimumAmountMinor: 1_000n,
    maximumAmountMinor: 500_000n,
    description: 'Donation to the community fund',
  });
}
