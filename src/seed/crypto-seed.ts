import crypto from 'node:crypto';
import type { Knex } from 'knex';

/** The demo owner's address book entry: a TRON address for USDT, usable at once. */
export const DEMO_WITHDRAWAL_ADDRESS = { asset: 'USDT', network: 'tron', address: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t', label: 'Demo exchange' } as const;

/**
 * One withdrawal address of the demo owner (a tier_2 user), active from the seed on: a new
 * address waits CRYPTO_ADDRESS_ACTIVATION_SECONDS (24 hours by default) before money can leave
 * to it, so the crypto guide withdraws to this one.
 */
export async function seedCryptoWithdrawalAddresses(trx: Knex.Transaction): Promise<void> {
  const owner = (await trx('users').where({ email: 'owner@demo.example' }).first('id')) as { id: string } | undefined;
  if (!owner) return;
  const now = new Date();
  await trx('crypto_withdrawal_addresses').insert({ id: crypto.randomUUID(), user_id: owner.id, ...DEMO_WITHDRAWAL_ADDRESS, memo: null, active_at: now, created_at: now });
}
