import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * `events_history` (src/modules/events/sql/events_history.sql): an object's history read with a
 * snapshot of its own, for the statements that lock the object and read its history at once
 * (an escrow action reads its history in its lock). A plain subquery there would keep the
 * snapshot from before a lock wait and miss the events of the change it waited for.
 */
export const FUNCTIONS = {
  events_history: '645886209962f904',
};

export async function up(knex: Knex): Promise<void> {
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP FUNCTION IF EXISTS events_history(text, uuid)');
}
