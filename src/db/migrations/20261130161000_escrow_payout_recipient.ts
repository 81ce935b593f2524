import type { Knex } from 'knex';

/**
 * Whose payout an escrow's held payout is: the seller's (every payout held before), or the
 * buyer's share of a split ruling (the seller paid). Set with the payout, never without it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE escrows ADD COLUMN payout_recipient text CHECK (payout_recipient IN ('seller', 'buyer'));
    UPDATE escrows SET payout_recipient = 'seller' WHERE payout_id IS NOT NULL;
    ALTER TABLE escrows ADD CONSTRAINT escrows_payout_recipient CHECK ((payout_id IS NULL) = (payout_recipient IS NULL));
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE escrows DROP CONSTRAINT escrows_payout_recipient, DROP COLUMN payout_recipient');
}
