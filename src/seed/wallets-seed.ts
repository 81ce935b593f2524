import type { Knex } from 'knex';
import { fundWallet } from '../modules/ledger';
import { DEMO_OUTSIDER_EMAIL, DEMO_USERS } from './identity-seed';

/** What every demo user starts with, in minor units: 1,000,000 XOF and 1,000.00 EUR. */
export const DEMO_WALLET_FUNDING: ReadonlyArray<[currency: string, amountMinor: bigint]> = [
  ['XOF', 1_000_000n],
  ['EUR', 100_000n],
];

/**
 * Funds each demo user's wallets through the ledger: one posting per wallet from the
 * platform's external clearing account, so the seed obeys the same invariants as real money.
 */
export async function seedWallets(trx: Knex.Transaction): Promise<void> {
  const emails = [...DEMO_USERS.map((u) => u.email), DEMO_OUTSIDER_EMAIL];
  const users = (await trx('users').whereIn('email', emails).select('id', 'email')) as Array<{ id: string; email: string }>;
  for (const user of users) {
    for (const [currency, amountMinor] of DEMO_WALLET_FUNDING) {
      await fundWallet(trx, user.id, currency, amountMinor, `demo-seed:${user.id}:${currency}`);
    }
  }
}
