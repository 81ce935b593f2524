import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * `write_apply` writes the rows of the tontines, the transfers and the money in and out
 * (top-ups, refunds, payouts) besides the escrows, by insert or by guarded update.
 */
export const FUNCTIONS = {
  write_apply: '7a8be6ba95f4bb25',
};

export async function up(knex: Knex): Promise<void> {
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

export async function down(): Promise<void> {
  // The previous text is applied again by nothing: write_apply keeps its wider list of tables, which writes nothing by itself.
}
