import type { Knex } from 'knex';

/**
 * The network opening status of each organisation and the audit trail of its changes.
 *
 * A row exists once the status was first changed; before that the status reads as
 * `is_open: null, is_visible: false, version: 0`. `version` is the optimistic-concurrency
 * counter: every change bumps it by one, up to 2147483646 (the contract's range; the CHECK
 * makes an overflow impossible, and the service refuses the change with VersionExhausted).
 * `is_visible` and the public address are publication fields that the status API never
 * writes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('organization_network_status', (t) => {
    t.uuid('organization_id').primary().references('organizations.id').onDelete('CASCADE');
    t.boolean('is_open');
    t.boolean('is_visible').notNullable().defaultTo(false);
    t.text('public_address');
    t.integer('version').notNullable().defaultTo(0);
    t.uuid('updated_by').references('users.id').onDelete('SET NULL');
    t.timestamp('updated_at', { useTz: true });
  });
  await knex.raw(`ALTER TABLE organization_network_status
    ADD CONSTRAINT organization_network_status_version CHECK (version BETWEEN 0 AND 2147483646),
    ADD CONSTRAINT organization_network_status_public_address_length CHECK (public_address IS NULL OR length(public_address) <= 500)`);

  await knex.schema.createTable('network_status_changes', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.uuid('actor_user_id').references('users.id').onDelete('SET NULL');
    t.boolean('before_is_open');
    t.integer('before_version').notNullable();
    t.boolean('after_is_open');
    t.integer('after_version').notNullable();
    t.text('request_id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.raw('clock_timestamp()'));
  });
  await knex.raw(`ALTER TABLE network_status_changes
    ADD CONSTRAINT network_status_changes_versions CHECK (after_version = before_version + 1),
    ADD CONSTRAINT network_status_changes_request_id_length CHECK (request_id IS NULL OR length(request_id) <= 128);
    -- One change per version (a second writer of the same version cannot be audited twice);
    -- also the history's order, newest first.
    CREATE UNIQUE INDEX network_status_changes_version_unique ON network_status_changes (organization_id, after_version);`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('network_status_changes');
  await knex.schema.dropTable('organization_network_status');
}
