import type { Knex } from 'knex';

/**
 * `tontines.paid_in_cycle`: the contributions paid to the running cycle, changed by every
 * contribution in the statement that applies it (0 again when the next cycle opens). A
 * contribution decided from a plain read (a window of contributions, src/modules/tontines/
 * tontine-window.ts) expects the count it read: two contributions decided from the same read
 * cannot both apply, so a cycle's last contribution is always seen as the last and pays the pot.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE tontines ADD COLUMN paid_in_cycle integer NOT NULL DEFAULT 0');
  await knex.raw(`UPDATE tontines t SET paid_in_cycle = (
      SELECT count(*) FROM tontine_contributions k WHERE k.tontine_id = t.id AND k.cycle_number = t.current_cycle AND k.status = 'paid')
    WHERE t.current_cycle > 0`);
  await knex.raw('ALTER TABLE tontines ADD CONSTRAINT tontines_paid_in_cycle CHECK (paid_in_cycle BETWEEN 0 AND max_members)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE tontines DROP COLUMN paid_in_cycle');
}
