import type { Knex } from 'knex';

/**
 * Whose payout an escrow's held payout is: the seller's (every payout held before), or the
 * buyer's share of a split ruling, the seller and the fee paid by the escrow's settlement
 * posting while the escrow is still `accepted` (its share held). Set with the payout, never
 * without it. An escrow holds a payout at most once per party (the seller's whole settlement,
 * then the buyer's share once the seller is paid); a tontine's cycle, its pot once.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE escrows ADD COLUMN payout_recipient text CHECK (payout_recipient IN ('seller', 'buyer'));
    UPDATE escrows SET payout_recipient = 'seller' WHERE payout_id IS NOT NULL;
    ALTER TABLE escrows ADD CONSTRAINT escrows_payout_recipient CHECK ((payout_id IS NULL) = (payout_recipient IS NULL)),
      DROP CONSTRAINT escrows_settled_has_posting,
      ADD CONSTRAINT escrows_settled_has_posting CHECK ((settlement_posting_id IS NOT NULL)
        = (status IN ('released', 'refunded') OR (status = 'accepted' AND payout_recipient IS NOT DISTINCT FROM 'buyer')));
    DROP INDEX held_payouts_one_per_payout;
    CREATE UNIQUE INDEX held_payouts_one_per_payout ON held_payouts (subject_id, cycle_number) WHERE subject_type = 'tontine';
    CREATE UNIQUE INDEX held_payouts_one_per_escrow_party ON held_payouts (subject_id, recipient_user_id) WHERE subject_type = 'escrow';
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX held_payouts_one_per_escrow_party;
    DROP INDEX held_payouts_one_per_payout;
    CREATE UNIQUE INDEX held_payouts_one_per_payout ON held_payouts (subject_type, subject_id, coalesce(cycle_number, 0));
    ALTER TABLE escrows DROP CONSTRAINT escrows_settled_has_posting,
      ADD CONSTRAINT escrows_settled_has_posting CHECK ((status IN ('released', 'refunded')) = (settlement_posting_id IS NOT NULL)),
      DROP CONSTRAINT escrows_payout_recipient, DROP COLUMN payout_recipient;
  `);
}
