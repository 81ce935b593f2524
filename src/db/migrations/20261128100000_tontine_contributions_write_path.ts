import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * A tontine contribution on the one write path: `tontine_state` reads what an action on a
 * tontine needs (members, cycles, contributions, the pool's balance) with a snapshot of its own,
 * so it can run in the statement that locks the tontine; `write_apply` updates a row named by
 * the columns of its key (a cycle, a member) and writes a posting's id into an event's payload.
 */
export const FUNCTIONS = {
  tontine_state: '79f4432d89bb022d',
  write_apply: '09784ee498295b2d',
};

export async function up(knex: Knex): Promise<void> {
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

export async function down(knex: Knex): Promise<void> {
  // write_apply keeps what it gained, which writes nothing by itself.
  await knex.raw('DROP FUNCTION IF EXISTS tontine_state(uuid, integer, uuid, uuid)');
}
