import type { Knex } from 'knex';
import { VerificationRequiredError } from './crypto-errors';

/** The tier crypto needs: a verified identity. */
export const CRYPTO_TIER = 'tier_2';

/** Refuses (403 VerificationRequired) a user below tier_2. */
export async function requireCryptoTier(db: Knex | Knex.Transaction, userId: string): Promise<void> {
  const user = (await db('users').where({ id: userId }).first('tier')) as { tier: string } | undefined;
  assertCryptoTier(user?.tier);
}

/** Refuses (403 VerificationRequired) a tier below tier_2, as read by the caller's own statement. */
export function assertCryptoTier(tier: string | undefined): void {
  if (tier !== CRYPTO_TIER) throw new VerificationRequiredError(tier ?? 'tier_0', CRYPTO_TIER);
}
