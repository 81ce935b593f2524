import type { Knex } from 'knex';
import { externalClearingAccount, post } from '../modules/ledger';
import type { CreateOrgAccountInput } from '../modules/accounts';
import type { Services } from '../services';
import { DEMO_ORGANIZATION_NAME, DEMO_OTHER_ORGANIZATION_NAME, findDemoOrganizationId } from './identity-seed';

/** Labels of the demo organisation's accounts (other seed steps find them by label). */
export const DEMO_ACCOUNTS = {
  xof: 'Main XOF account',
  eur: 'EUR collections',
  usd: 'USD collections',
  inactive: 'Former XOF account',
} as const;

type DemoAccount = Omit<CreateOrgAccountInput, 'organizationId'> & {
  /** Money movements, in minor units: positive = received from outside, negative = paid out. */
  movements: Array<{ amountMinor: bigint; reference: string; counterparty: string }>;
};

const DEMO_TRADING_ACCOUNTS: DemoAccount[] = [
  {
    label: DEMO_ACCOUNTS.xof,
    currency: 'XOF',
    status: 'active',
    holderType: 'business',
    bankName: 'Demo Bank West Africa',
    accountNumber: 'CI0081234567890',
    movements: [
      { amountMinor: 1_500_000n, reference: 'ORDER-1001', counterparty: 'Mobile money customer' },
      { amountMinor: 250_000n, reference: 'ORDER-1002', counterparty: 'Card customer' },
      { amountMinor: -400_000n, reference: 'SUPPLIER-77', counterparty: 'Supplier payout' },
      { amountMinor: 75_500n, reference: 'ORDER-1003', counterparty: 'Mobile money customer' },
    ],
  },
  {
    label: DEMO_ACCOUNTS.eur,
    currency: 'EUR',
    status: 'active',
    holderType: 'business',
    bankName: 'Demo Bank Europe',
    iban: 'FR7630006000011234567890189',
    movements: [
      { amountMinor: 1_250_050n, reference: 'INV-2026-000001', counterparty: 'Client transfer' },
      { amountMinor: -99_99n, reference: 'FEES-2026-11', counterparty: 'Bank fees' },
      { amountMinor: 420_00n, reference: 'ORDER-2001', counterparty: 'Card customer' },
    ],
  },
  {
    label: DEMO_ACCOUNTS.usd,
    currency: 'USD',
    status: 'active',
    holderType: 'business',
    bankName: 'Demo Bank International',
    accountNumber: '4000123456789',
    movements: [
      { amountMinor: 5_000_00n, reference: 'ORDER-3001', counterparty: 'Card customer' },
      { amountMinor: -1_200_00n, reference: 'PAYOUT-3001', counterparty: 'Supplier payout' },
    ],
  },
  {
    label: DEMO_ACCOUNTS.inactive,
    currency: 'XOF',
    status: 'inactive',
    holderType: 'individual',
    bankName: 'Old Savings Bank',
    accountNumber: '000111222333',
    movements: [{ amountMinor: 10_000n, reference: 'LEGACY-1', counterparty: 'Legacy transfer' }],
  },
];

const OTHER_COMPANY_ACCOUNTS: DemoAccount[] = [
  {
    label: 'Other Company XOF',
    currency: 'XOF',
    status: 'active',
    holderType: 'business',
    bankName: 'Demo Bank West Africa',
    accountNumber: '9990001112223',
    movements: [{ amountMinor: 50_000n, reference: 'OTHER-1', counterparty: 'Mobile money customer' }],
  },
];

async function seedAccounts(trx: Knex.Transaction, services: Services, organizationId: string, accounts: DemoAccount[]): Promise<void> {
  for (const { movements, ...input } of accounts) {
    const account = await services.accounts.createAccount(trx, { ...input, organizationId });
    const clearing = await externalClearingAccount(trx, account.currency);
    for (const [index, movement] of movements.entries()) {
      const incoming = movement.amountMinor > 0n;
      const amount = incoming ? movement.amountMinor : -movement.amountMinor;
      // Only through the ledger: money enters from, or leaves to, the external clearing account.
      await post(trx, {
        kind: incoming ? 'demo.payment_received' : 'demo.payout',
        reference: `demo-seed:${account.id}:${index}`,
        metadata: { reference: movement.reference, counterparty: movement.counterparty },
        entries: [
          { accountId: clearing.id, amountMinor: incoming ? -amount : amount },
          { accountId: account.ledgerAccountId, amountMinor: incoming ? amount : -amount },
        ],
      });
    }
  }
}

/**
 * Seed step (after identity and ledger): "Demo Trading SARL" gets active XOF, EUR and USD
 * accounts and an inactive XOF one, each funded through ledger postings from the external
 * clearing account (a few in, a few out) so statements have content; "Other Company SA" gets
 * one account (a foreign account for the 404 cases).
 */
export async function seedOrganizationAccounts(trx: Knex.Transaction, services: Services): Promise<void> {
  await seedAccounts(trx, services, await findDemoOrganizationId(trx, DEMO_ORGANIZATION_NAME), DEMO_TRADING_ACCOUNTS);
  await seedAccounts(trx, services, await findDemoOrganizationId(trx, DEMO_OTHER_ORGANIZATION_NAME), OTHER_COMPANY_ACCOUNTS);
}
