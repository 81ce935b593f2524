import type { Knex } from 'knex';

/**
 * API keys of organisations. A key (`api_keys`) has a name, scopes, an expiry and,
 * once deleted, `revoked_at`; its secrets (`api_key_secrets`) are found by their public id and
 * stored only as an HMAC (hex) under the server's pepper. A key has exactly one current secret
 * (`retires_at` NULL); a roll gives the previous one a `retires_at` (its grace period).
 * Key events (`api_key.created`, `api_key.rolled`, `api_key.revoked`) go to the events table.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('api_keys', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.specificType('scopes', 'text[]').notNullable();
    t.text('environment').notNullable();
    t.uuid('created_by').notNullable().references('users.id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('revoked_at', { useTz: true });
    t.uuid('revoked_by').references('users.id');
    t.timestamp('last_used_at', { useTz: true });
    t.text('last_used_ip');
    t.index(['organization_id', 'created_at', 'id'], 'api_keys_organization_index');
  });
  await knex.schema.createTable('api_key_secrets', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('api_key_id').notNullable().references('api_keys.id').onDelete('CASCADE');
    t.text('public_id').notNullable().unique();
    t.specificType('secret_hash', 'char(64)').notNullable();
    t.text('last4').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('retires_at', { useTz: true });
  });
  await knex.raw(`ALTER TABLE api_keys
    ADD CONSTRAINT api_keys_name_length CHECK (length(name) BETWEEN 1 AND 100),
    ADD CONSTRAINT api_keys_scopes_present CHECK (cardinality(scopes) BETWEEN 1 AND 14),
    ADD CONSTRAINT api_keys_environment CHECK (environment IN ('live', 'test')),
    ADD CONSTRAINT api_keys_expiry_after_creation CHECK (expires_at > created_at),
    ADD CONSTRAINT api_keys_revocation_complete CHECK ((revoked_at IS NULL) = (revoked_by IS NULL))`);
  await knex.raw(`ALTER TABLE api_key_secrets
    ADD CONSTRAINT api_key_secrets_public_id_format CHECK (public_id ~ '^[0-9A-Za-z]{12}$'),
    ADD CONSTRAINT api_key_secrets_hash_format CHECK (secret_hash ~ '^[0-9a-f]{64}$'),
    ADD CONSTRAINT api_key_secrets_last4_format CHECK (last4 ~ '^[0-9A-Za-z]{4}$');
    CREATE UNIQUE INDEX api_key_secrets_one_current ON api_key_secrets (api_key_id) WHERE retires_at IS NULL`);
  // Key events are events of the organisation's key (subject 'api_key'), beside every subject of the
  // webhooks migration (20261124130100) before it.
  await knex.raw(`ALTER TABLE events DROP CONSTRAINT events_subject_type;
    ALTER TABLE events ADD CONSTRAINT events_subject_type CHECK (subject_type IN ('escrow', 'tontine', 'payment', 'payment_link', 'invoice', 'quote', 'credit_note', 'network_status', 'transfer', 'webhook_endpoint', 'api_key'))`);
}

export async function down(knex: Knex): Promise<void> {
  // The events are append-only: key events stay, so the narrower check applies to new rows only.
  await knex.raw(`ALTER TABLE events DROP CONSTRAINT events_subject_type;
    ALTER TABLE events ADD CONSTRAINT events_subject_type CHECK (subject_type IN ('escrow', 'tontine', 'payment', 'payment_link', 'invoice', 'quote', 'credit_note', 'network_status', 'transfer', 'webhook_endpoint')) NOT VALID`);
  await knex.schema.dropTable('api_key_secrets');
  await knex.schema.dropTable('api_keys');
}
