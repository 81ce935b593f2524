import type { Knex } from 'knex';

/**
 * Failed logins, counted per account and source address: `subject` is the account
 * (`u:<user id>`), or for an identifier nobody has, `i:<sha256 of the identifier>`, so an
 * unknown identifier is counted and locked exactly like an account and the answers never say
 * which exists. `source` is the client address, or `*` for the account as a whole.
 *
 * A row counts `failures` since `window_started_at` (a window of LOGIN_LOCK_MINUTES); the
 * attempt that reaches the limit sets `locked_until`. Each attempt reserves its count in one
 * upsert before the password is verified, so concurrent attempts on any instance never verify
 * more passwords than the limit. `last_success_at` on a source row marks a known source.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('login_attempts', (t) => {
    t.text('subject').notNullable();
    t.text('source').notNullable();
    t.integer('failures').notNullable().defaultTo(0);
    t.timestamp('window_started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('locked_until', { useTz: true });
    t.timestamp('last_success_at', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['subject', 'source']);
  });
  await knex.schema.raw('CREATE INDEX login_attempts_updated_at ON login_attempts (updated_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('login_attempts');
}
