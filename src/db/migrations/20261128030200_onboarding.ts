import type { Knex } from 'knex';

/**
 * Sign-up with a one-time code, password resets, and what a user sees of their sessions.
 *
 * - `signup_verifications`: one row per POST /auth/signup. The code is stored only as an HMAC
 *   (`code_hash`, keyed by a server secret and the row id); `attempts` counts wrong codes (5
 *   spend the row); `completed_at` and `user_id` are set when the code created the account.
 *   For an identifier that already has an account (`existing_account`) the row holds no
 *   password and no code was sent: no code completes it, and the answers are the same.
 * - `password_resets`: one row per POST /auth/password-reset (`user_id` null when nobody has
 *   the identifier: answered like the others); the newest live row of an identifier counts.
 * - `users.country` (ISO 3166-1 alpha-2) and `users.terms_accepted_at`, given at sign-up.
 * - `sessions.ip` and `sessions.user_agent`: the client that logged in or last refreshed;
 *   `sessions.started_at`: the login that began the rotation chain (copied on every refresh).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('signup_verifications', (t) => {
    t.uuid('id').primary();
    t.text('identifier').notNullable();
    t.text('channel').notNullable();
    t.text('code_hash').notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.boolean('existing_account').notNullable().defaultTo(false);
    t.text('password_hash');
    t.text('full_name');
    t.text('country');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('completed_at', { useTz: true });
    t.uuid('user_id').references('users.id').onDelete('SET NULL');
    t.index(['created_at']);
  });
  await knex.raw(`ALTER TABLE signup_verifications
    ADD CONSTRAINT signup_verifications_channel CHECK (channel IN ('sms', 'email')),
    ADD CONSTRAINT signup_verifications_attempts CHECK (attempts >= 0),
    ADD CONSTRAINT signup_verifications_new_account CHECK (existing_account OR completed_at IS NOT NULL OR (password_hash IS NOT NULL AND full_name IS NOT NULL AND country ~ '^[A-Z]{2}$'))`);

  await knex.schema.createTable('password_resets', (t) => {
    t.uuid('id').primary();
    t.text('identifier').notNullable();
    t.uuid('user_id').references('users.id').onDelete('CASCADE');
    t.text('channel').notNullable();
    t.text('code_hash').notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('completed_at', { useTz: true });
  });
  await knex.raw(`ALTER TABLE password_resets
    ADD CONSTRAINT password_resets_channel CHECK (channel IN ('sms', 'email')),
    ADD CONSTRAINT password_resets_attempts CHECK (attempts >= 0)`);
  await knex.raw('CREATE INDEX password_resets_identifier ON password_resets (identifier, created_at DESC)');
  await knex.raw('CREATE INDEX password_resets_created_at ON password_resets (created_at)');

  await knex.schema.alterTable('users', (t) => {
    t.text('country');
    t.timestamp('terms_accepted_at', { useTz: true });
  });
  await knex.raw(`ALTER TABLE users ADD CONSTRAINT users_country CHECK (country ~ '^[A-Z]{2}$')`);

  await knex.schema.alterTable('sessions', (t) => {
    t.text('ip');
    t.text('user_agent');
    t.timestamp('started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('UPDATE sessions SET started_at = created_at');
  await knex.raw('CREATE INDEX sessions_user_live ON sessions (user_id, started_at DESC, id DESC) WHERE revoked_at IS NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS sessions_user_live');
  await knex.schema.alterTable('sessions', (t) => {
    t.dropColumn('ip');
    t.dropColumn('user_agent');
    t.dropColumn('started_at');
  });
  await knex.raw('ALTER TABLE users DROP CONSTRAINT IF EXISTS users_country');
  await knex.schema.alterTable('users', (t) => {
    t.dropColumn('country');
    t.dropColumn('terms_accepted_at');
  });
  await knex.schema.dropTable('password_resets');
  await knex.schema.dropTable('signup_verifications');
}
