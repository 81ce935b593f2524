import type { Knex } from 'knex';

/**
 * Escrows and tontines that no party can game.
 *
 * - `tontine_cycles.beneficiary_user_id` may be null: a random tontine draws each cycle's
 *   beneficiary only when that cycle's pot is complete (from the committed seed and the cycle
 *   number), so nobody knows the order while the tontine can still be canceled. A cycle is
 *   never paid out without its beneficiary.
 * - `tontines.draw_per_cycle`: true for random tontines drawn cycle by cycle (their
 *   `draw_seed` stays secret until the tontine ends); false for tontines started before this
 *   migration, whose whole order was drawn and revealed at the start.
 * - `tontines.dissolved_*`: a platform administrator dissolved the tontine (after a payout no
 *   member can end it); the reason is shown to every member.
 * - `escrows.fee_minimum_minor`: the per-currency minimum fee (`ESCROW_MIN_FEE`) agreed at
 *   creation, so a later split charges the fee under the same terms.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE tontine_cycles ALTER COLUMN beneficiary_user_id DROP NOT NULL`);
  await knex.raw(`ALTER TABLE tontine_cycles
    ADD CONSTRAINT tontine_cycles_paid_out_has_beneficiary CHECK (status <> 'paid_out' OR beneficiary_user_id IS NOT NULL)`);
  await knex.schema.alterTable('tontines', (t) => {
    t.boolean('draw_per_cycle').notNullable().defaultTo(false);
    t.text('dissolution_reason');
    t.uuid('dissolved_by_user_id').references('users.id');
    t.timestamp('dissolved_at', { useTz: true });
  });
  await knex.raw(`ALTER TABLE tontines
    ADD CONSTRAINT tontines_dissolution CHECK (
      (dissolved_at IS NULL AND dissolution_reason IS NULL AND dissolved_by_user_id IS NULL)
      OR (status = 'canceled' AND dissolved_at IS NOT NULL AND dissolved_by_user_id IS NOT NULL AND length(dissolution_reason) BETWEEN 1 AND 500))`);
  await knex.schema.alterTable('escrows', (t) => {
    t.bigInteger('fee_minimum_minor').notNullable().defaultTo(0);
  });
  await knex.raw(`ALTER TABLE escrows ADD CONSTRAINT escrows_fee_minimum CHECK (fee_minimum_minor >= 0)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE escrows DROP CONSTRAINT escrows_fee_minimum`);
  await knex.schema.alterTable('escrows', (t) => {
    t.dropColumn('fee_minimum_minor');
  });
  await knex.raw(`ALTER TABLE tontines DROP CONSTRAINT tontines_dissolution`);
  await knex.schema.alterTable('tontines', (t) => {
    t.dropColumn('dissolved_at');
    t.dropColumn('dissolved_by_user_id');
    t.dropColumn('dissolution_reason');
    t.dropColumn('draw_per_cycle');
  });
  await knex.raw(`ALTER TABLE tontine_cycles DROP CONSTRAINT tontine_cycles_paid_out_has_beneficiary`);
  await knex.raw(`ALTER TABLE tontine_cycles ALTER COLUMN beneficiary_user_id SET NOT NULL`);
}
