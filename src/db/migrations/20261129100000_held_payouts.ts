import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * Payouts held for verification: an escrow's release or a tontine's pot that its recipient's
 * tier limits do not allow yet stays in its holding account (the escrow's holding shard, the
 * tontine's pool) as a `held_payouts` row, `held` until the job completes it (the recipient's
 * tier or balance allows it: `completed`, `posting_id` the payout) or an administrator returns
 * it to its payer (`returned`, `posting_id` the return). The escrow shows it (`payout_*`
 * columns, the escrow `accepted` meanwhile), a cycle names it (`held_payout_id`; a held cycle is
 * `paid_out` without a payout posting). `ledger_post` checks a tontine's pot against the
 * beneficiary's limits; `write_apply` writes the table; `tontine_state` shows each cycle's.
 */
export const FUNCTIONS = {
  ledger_post: '4bc6b5590f366212',
  write_apply: '939bcc8ad9bd78a4',
  tontine_state: '497573fc6e8b656e',
};

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE held_payouts (
      id uuid PRIMARY KEY,
      subject_type text NOT NULL CHECK (subject_type IN ('escrow', 'tontine')),
      subject_id uuid NOT NULL,
      cycle_number integer,
      recipient_user_id uuid NOT NULL REFERENCES users(id),
      currency char(3) NOT NULL REFERENCES currencies(code),
      amount_minor bigint NOT NULL CHECK (amount_minor > 0),
      reason text NOT NULL CHECK (reason IN ('recipient_limit')),
      status text NOT NULL CHECK (status IN ('held_for_verification', 'completed', 'returned')),
      posting_id uuid REFERENCES postings(id),
      returned_by_user_id uuid REFERENCES users(id),
      return_reason text,
      held_at timestamptz NOT NULL,
      settled_at timestamptz,
      next_attempt_at timestamptz NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      CONSTRAINT held_payouts_cycle CHECK ((subject_type = 'tontine') = (cycle_number IS NOT NULL)),
      CONSTRAINT held_payouts_settled CHECK ((status = 'held_for_verification') = (settled_at IS NULL) AND (status = 'held_for_verification') = (posting_id IS NULL)),
      CONSTRAINT held_payouts_returned CHECK ((status = 'returned') = (returned_by_user_id IS NOT NULL))
    );
    CREATE UNIQUE INDEX held_payouts_one_per_payout ON held_payouts (subject_type, subject_id, coalesce(cycle_number, 0));
    CREATE INDEX held_payouts_due ON held_payouts (next_attempt_at, id) WHERE status = 'held_for_verification';
    CREATE INDEX held_payouts_listing ON held_payouts (held_at DESC, id DESC);
    ALTER TABLE escrows
      ADD COLUMN payout_id uuid REFERENCES held_payouts(id),
      ADD COLUMN payout_status text CHECK (payout_status IN ('held_for_verification', 'completed', 'returned')),
      ADD COLUMN payout_reason text,
      ADD COLUMN payout_held_at timestamptz,
      ADD COLUMN payout_settled_at timestamptz,
      ADD CONSTRAINT escrows_payout_held CHECK ((status = 'accepted') = (payout_status IS NOT DISTINCT FROM 'held_for_verification'));
    ALTER TABLE tontine_cycles ADD COLUMN held_payout_id uuid REFERENCES held_payouts(id);
    ALTER TABLE tontine_cycles DROP CONSTRAINT tontine_cycles_paid_out;
    ALTER TABLE tontine_cycles ADD CONSTRAINT tontine_cycles_paid_out CHECK (
      CASE WHEN status = 'paid_out' THEN (payout_posting_id IS NOT NULL AND paid_out_at IS NOT NULL) OR held_payout_id IS NOT NULL
           ELSE payout_posting_id IS NULL AND paid_out_at IS NULL END);
  `);
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE tontine_cycles DROP CONSTRAINT tontine_cycles_paid_out;
    ALTER TABLE tontine_cycles ADD CONSTRAINT tontine_cycles_paid_out CHECK ((status = 'paid_out') = (payout_posting_id IS NOT NULL AND paid_out_at IS NOT NULL));
    ALTER TABLE tontine_cycles DROP COLUMN held_payout_id;
    ALTER TABLE escrows DROP CONSTRAINT escrows_payout_held, DROP COLUMN payout_settled_at, DROP COLUMN payout_held_at,
      DROP COLUMN payout_reason, DROP COLUMN payout_status, DROP COLUMN payout_id;
    DROP TABLE held_payouts;
  `);
}
