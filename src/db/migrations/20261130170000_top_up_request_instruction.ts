import type { Knex } from 'knex';

/**
 * A top-up's collection request is a rail instruction (`top_up.request`), recorded by a trigger
 * with the top-up's insert: the request that made the top-up tries it once committed, and the
 * job `rail-instructions.deliver-due` delivers it if that try never happened (the process died
 * right after the commit) or failed, so a pending top-up's payer is always asked. The rail is
 * idempotent on the top-up's provider reference; a top-up settled meanwhile is not asked again.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE rail_instructions DROP CONSTRAINT rail_instructions_kind_check;
    ALTER TABLE rail_instructions ADD CONSTRAINT rail_instructions_kind_check
      CHECK (kind IN ('top_up.request', 'top_up.give_back', 'refund.submit', 'payout.submit'));
    CREATE TRIGGER top_ups_rail_request AFTER INSERT ON top_ups FOR EACH ROW
      WHEN (NEW.status = 'pending') EXECUTE FUNCTION rail_instruction_record('top_up.request');
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TRIGGER IF EXISTS top_ups_rail_request ON top_ups;
    DELETE FROM rail_instructions WHERE kind = 'top_up.request';
    ALTER TABLE rail_instructions DROP CONSTRAINT rail_instructions_kind_check;
    ALTER TABLE rail_instructions ADD CONSTRAINT rail_instructions_kind_check
      CHECK (kind IN ('top_up.give_back', 'refund.submit', 'payout.submit'));
  `);
}
