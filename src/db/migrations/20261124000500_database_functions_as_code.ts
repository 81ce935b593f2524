import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * SQL as code: the database's functions live in their modules as `.sql` files
 * (src/modules/<area>/sql/), so a review reads what runs; applied here with CREATE OR REPLACE and
 * pinned to the hash of their text (see src/db/database-functions.ts). transfer_create answers
 * a finished key as finished before it refuses on the key's lock; transfer_create_batch is
 * the group commit of POST /transfers.
 */
export const FUNCTIONS = {
  ledger_post: '9821d605d63db625',
  ledger_refuse_write: '8636209320c626ae',
  ledger_reject_change: '022dac785350ef40',
  transfer_create: '16f3b69151a1c832',
  transfer_create_batch: 'b3cb4e92625c1bc0',
};

export async function up(knex: Knex): Promise<void> {
  // transfer_create takes one more argument (p_attempt): the old signature would stay beside it.
  await knex.raw('DROP FUNCTION transfer_create(uuid, uuid, text, text, text, integer, integer, text, bigint, text, text, text, text, boolean)');
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

/** Forward only: the previous texts live in the older migrations. */
export async function down(): Promise<void> {
  throw new Error('20261124000500_database_functions_as_code is forward-only: restore a backup taken before it to go back');
}
