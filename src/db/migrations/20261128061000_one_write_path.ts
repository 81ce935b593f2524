import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * The one write path (src/modules/writes): `write_claim` claims a request's Idempotency-Key as
 * the first step of the statement that reads (and locks) what its decision needs, with the
 * pipeline's advisory lock and row; `write_apply` applies a decision (its postings through
 * ledger_post, its rows, its events, the key's completion) in one statement.
 */
export const FUNCTIONS = {
  write_claim: '0b1a5ed44fad6a46',
  write_apply: '712ec7c2591d5bfa',
};

export async function up(knex: Knex): Promise<void> {
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP FUNCTION IF EXISTS write_apply(jsonb)');
  await knex.raw('DROP FUNCTION IF EXISTS write_claim(uuid, uuid, text, text, text, uuid, integer, integer)');
}
