import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * Issue 21 (SQL as code) and issue 26 finding 7: the database's functions now live in their
 * modules as `.sql` files (src/modules/<area>/sql/), applied here with CREATE OR REPLACE.
 * transfer_create answers a finished key as finished before it refuses on the key's lock.
 */
export async function up(knex: Knex): Promise<void> {
  await applyDatabaseFunctions(knex);
}

/** Forward only: the previous texts live in the older migrations. */
export async function down(): Promise<void> {
  throw new Error('20261124000100_database_functions_as_code is forward-only: restore a backup taken before it to go back');
}
