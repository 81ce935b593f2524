import type { Knex } from 'knex';

/**
 * Running totals of an account's entries at UTC day starts, for statements: the
 * balance, credits, debits and count of every entry booked before `at`. A statement page adds
 * to the checkpoint of its day only that day's entries, so it costs the same in year five as
 * in week one, instead of summing the account's whole history before `from`.
 *
 * Filled lazily by the statement reader (never by the posting function, which stays as it is):
 * a missing checkpoint is computed from the nearest one and stored, once the day started more
 * than an hour ago (far past the statements' settle margin), when no posting can still add an
 * entry before it. Entries are never updated or deleted, so a stored checkpoint stays true.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE ledger_statement_checkpoints (
      account_id uuid NOT NULL REFERENCES ledger_accounts (id),
      at timestamptz NOT NULL,
      balance_minor numeric(40, 0) NOT NULL,
      credits_minor numeric(40, 0) NOT NULL,
      debits_minor numeric(40, 0) NOT NULL,
      entry_count bigint NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (account_id, at),
      CONSTRAINT ledger_statement_checkpoints_day CHECK (at = date_trunc('day', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE ledger_statement_checkpoints');
}
