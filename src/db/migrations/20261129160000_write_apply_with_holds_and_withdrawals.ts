import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * write_apply as it runs with every table the one path writes (held payouts and crypto
 * withdrawals among them) and the hold of a payout its recipient's limits refuse: each of the
 * migrations that brought one of them pinned its own text.
 */
export const FUNCTIONS = {
  write_apply: '6a7e8447ec873b19',
};

export async function up(knex: Knex): Promise<void> {
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

export async function down(): Promise<void> {
  // write_apply keeps this text: the tables and the hold it names stay until their own migrations go down.
}
