import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * write_apply as it runs: every table the one path writes (held payouts and crypto withdrawals
 * among them), the hold of a payout its recipient's limits refuse, and accounts found through
 * their identity index (write_account_id). Each of the migrations that brought one of these
 * pinned its own text.
 */
export const FUNCTIONS = {
  write_apply: 'fbc525af5f2ddf11',
};

export async function up(knex: Knex): Promise<void> {
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

export async function down(): Promise<void> {
  // write_apply keeps this text: the tables and the hold it names stay until their own migrations go down.
}
