import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * A final crypto deposit whose credit its owner's stablecoin limits refuse is held for
 * verification, as an escrow's release or a tontine's pot is: the deposit
 * `held_for_verification` (it names its `held_payouts` row and when it was held), the coins
 * still in the network's clearing account, a `held_payouts` row of subject `crypto_deposit`
 * that the job completes (the credit posted once, the deposit `completed`). A held payout's
 * currency may now be a stablecoin (varchar(10), as the ledger's). A held deposit is never
 * credited while held: it has no credit posting until it is completed. `ledger_post` checks and
 * counts a deposit's credit (`crypto.deposit`) against its owner's limits, as a tontine's pot,
 * though it reaches a frozen wallet: before, a credit that may reach a frozen wallet was neither
 * checked nor counted, so a deposit was credited over every cap.
 */
export const FUNCTIONS = {
  ledger_post: '578f7356092b54e3',
};

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE held_payouts DROP CONSTRAINT held_payouts_subject_type_check;
    ALTER TABLE held_payouts ADD CONSTRAINT held_payouts_subject_type_check CHECK (subject_type IN ('escrow', 'tontine', 'crypto_deposit'));
    ALTER TABLE held_payouts ALTER COLUMN currency TYPE varchar(10);
    ALTER TABLE crypto_deposits
      ADD COLUMN held_payout_id uuid REFERENCES held_payouts(id),
      ADD COLUMN held_at timestamptz;
    ALTER TABLE crypto_deposits DROP CONSTRAINT crypto_deposits_status;
    ALTER TABLE crypto_deposits
      ADD CONSTRAINT crypto_deposits_status CHECK (status IN ('detected', 'confirming', 'held_for_verification', 'completed', 'failed', 'reversed')),
      ADD CONSTRAINT crypto_deposits_held CHECK ((held_payout_id IS NULL) = (held_at IS NULL)
        AND (status <> 'held_for_verification' OR held_payout_id IS NOT NULL));
  `);
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE crypto_deposits DROP CONSTRAINT crypto_deposits_held, DROP CONSTRAINT crypto_deposits_status;
    ALTER TABLE crypto_deposits ADD CONSTRAINT crypto_deposits_status CHECK (status IN ('detected', 'confirming', 'completed', 'failed', 'reversed'));
    ALTER TABLE crypto_deposits DROP COLUMN held_at, DROP COLUMN held_payout_id;
    DELETE FROM held_payouts WHERE subject_type = 'crypto_deposit';
    ALTER TABLE held_payouts ALTER COLUMN currency TYPE char(3);
    ALTER TABLE held_payouts DROP CONSTRAINT held_payouts_subject_type_check;
    ALTER TABLE held_payouts ADD CONSTRAINT held_payouts_subject_type_check CHECK (subject_type IN ('escrow', 'tontine'));
  `);
}
