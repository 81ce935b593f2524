import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * What the rails must be told, recorded with the change of state that calls for it:
 * `top_up.give_back` (a top-up reversed: its collection paid back to the payer),
 * `refund.submit` (a refund requested: paid back to the customer) and `payout.submit` (a payout
 * processing: paid out). A trigger on each table inserts the row in the same transaction (one
 * per kind and subject); the request that made the change tries it once committed, and the job
 * `rail-instructions.deliver-due` delivers what is left, retrying with backoff. The first
 * attempt of the job waits `next_attempt_at` (a minute), leaving the request its own try.
 */
export const FUNCTIONS = {
  rail_instruction_record: 'ad69af718e51cbf5',
};

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE rail_instructions (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      kind text NOT NULL CHECK (kind IN ('top_up.give_back', 'refund.submit', 'payout.submit')),
      subject_id uuid NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered')),
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz NOT NULL DEFAULT now() + interval '1 minute',
      last_error text,
      created_at timestamptz NOT NULL DEFAULT now(),
      delivered_at timestamptz,
      CONSTRAINT rail_instructions_one_per_subject UNIQUE (kind, subject_id),
      CONSTRAINT rail_instructions_delivered CHECK ((status = 'delivered') = (delivered_at IS NOT NULL))
    );
    CREATE INDEX rail_instructions_due ON rail_instructions (next_attempt_at, id) WHERE status = 'pending';
  `);
  await applyDatabaseFunctions(knex, FUNCTIONS);
  // Guarded: on a fresh database a newer text of the function skips it here (its own migration creates the triggers then).
  await knex.raw(`
    DO $$ BEGIN
      IF EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'rail_instruction_record') THEN
        CREATE TRIGGER top_ups_rail_give_back AFTER UPDATE OF status ON top_ups FOR EACH ROW
          WHEN (NEW.status = 'reversed' AND OLD.status IS DISTINCT FROM 'reversed') EXECUTE FUNCTION rail_instruction_record('top_up.give_back');
        CREATE TRIGGER refunds_rail_submit AFTER INSERT ON refunds FOR EACH ROW
          WHEN (NEW.status = 'pending') EXECUTE FUNCTION rail_instruction_record('refund.submit');
        CREATE TRIGGER payouts_rail_submit_created AFTER INSERT ON payouts FOR EACH ROW
          WHEN (NEW.status = 'processing') EXECUTE FUNCTION rail_instruction_record('payout.submit');
        CREATE TRIGGER payouts_rail_submit_approved AFTER UPDATE OF status ON payouts FOR EACH ROW
          WHEN (NEW.status = 'processing' AND OLD.status IS DISTINCT FROM 'processing') EXECUTE FUNCTION rail_instruction_record('payout.submit');
      END IF;
    END $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TRIGGER IF EXISTS top_ups_rail_give_back ON top_ups;
    DROP TRIGGER IF EXISTS refunds_rail_submit ON refunds;
    DROP TRIGGER IF EXISTS payouts_rail_submit_created ON payouts;
    DROP TRIGGER IF EXISTS payouts_rail_submit_approved ON payouts;
    DROP FUNCTION IF EXISTS rail_instruction_record();
    DROP TABLE rail_instructions;
  `);
}
