import type { Knex } from 'knex';

/** Users, sessions, organisations, their modules and memberships. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('users', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('email'); // stored lower-cased
    t.text('phone'); // E.164
    t.text('password_hash').notNullable();
    t.text('display_name');
    t.text('status').notNullable().defaultTo('active');
    t.integer('failed_login_count').notNullable().defaultTo(0);
    t.timestamp('locked_until', { useTz: true });
    t.boolean('is_admin').notNullable().defaultTo(false);
    t.timestamps(true, true);
    t.unique(['email']);
    t.unique(['phone']);
  });
  await knex.raw(`ALTER TABLE users
    ADD CONSTRAINT users_identifier_present CHECK (email IS NOT NULL OR phone IS NOT NULL),
    ADD CONSTRAINT users_email_lower CHECK (email = lower(email)),
    ADD CONSTRAINT users_phone_e164 CHECK (phone ~ '^\\+[1-9][0-9]{6,14}$'),
    ADD CONSTRAINT users_status CHECK (status IN ('active', 'locked', 'disabled')),
    ADD CONSTRAINT users_failed_login_count CHECK (failed_login_count >= 0)`);

  await knex.schema.createTable('sessions', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('refresh_token_hash').notNullable().unique();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_used_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('revoked_at', { useTz: true });
    t.text('revoked_reason');
    t.uuid('rotated_from').references('sessions.id');
    t.index(['user_id']);
    t.index(['rotated_from']);
  });

  await knex.schema.createTable('organizations', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('name').notNullable();
    t.text('status').notNullable().defaultTo('active');
    t.timestamps(true, true);
  });
  await knex.raw(`ALTER TABLE organizations
    ADD CONSTRAINT organizations_status CHECK (status IN ('active', 'inactive', 'suspended'))`);

  // A module absent from this table is not enabled for the organisation.
  await knex.schema.createTable('organization_modules', (t) => {
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('module').notNullable();
    t.text('access').notNullable().defaultTo('open');
    t.primary(['organization_id', 'module']);
  });
  await knex.raw(`ALTER TABLE organization_modules
    ADD CONSTRAINT organization_modules_module CHECK (module IN ('payment_links', 'invoices', 'accounts', 'network_status')),
    ADD CONSTRAINT organization_modules_access CHECK (access IN ('open', 'read_only', 'locked'))`);

  await knex.schema.createTable('memberships', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('role').notNullable();
    t.text('status').notNullable().defaultTo('active');
    t.timestamps(true, true);
    t.unique(['organization_id', 'user_id']);
    t.index(['user_id']);
  });
  await knex.raw(`ALTER TABLE memberships
    ADD CONSTRAINT memberships_role CHECK (role IN ('owner', 'admin', 'representative', 'director', 'finance_manager', 'cashier')),
    ADD CONSTRAINT memberships_status CHECK (status IN ('active', 'invited', 'suspended'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('memberships');
  await knex.schema.dropTable('organization_modules');
  await knex.schema.dropTable('organizations');
  await knex.schema.dropTable('sessions');
  await knex.schema.dropTable('users');
}
