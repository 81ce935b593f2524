import type { Knex } from 'knex';

/**
 * Idempotency keys of money-moving operations, scoped to the user and the operation.
 * A row is claimed `in_progress` (with a claim token and a lease) before the effect runs,
 * and completed, with the response and the resource it produced, in the same transaction
 * as the effect. A refused request deletes its claim, so the key may be retried.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('idempotency_keys', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('operation').notNullable();
    t.text('key').notNullable();
    t.specificType('request_hash', 'char(64)').notNullable();
    t.text('status').notNullable();
    // Fencing token of the request that owns an in_progress claim.
    t.uuid('claim_token').notNullable();
    // An in_progress claim older than this belongs to a request that died: it may be taken over.
    t.timestamp('locked_until', { useTz: true }).notNullable();
    t.integer('response_status');
    t.jsonb('response_body');
    t.text('resource_type');
    t.uuid('resource_id');
    t.text('resource_status');
    t.text('resource_location');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('completed_at', { useTz: true });
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.unique(['user_id', 'operation', 'key'], { indexName: 'idempotency_keys_scope_unique' });
    t.index(['user_id', 'key'], 'idempotency_keys_user_key_index');
    t.index(['expires_at'], 'idempotency_keys_expires_index');
  });
  await knex.raw(`ALTER TABLE idempotency_keys
    ADD CONSTRAINT idempotency_keys_key_format CHECK (key ~ '^[\\x21-\\x7E]{1,255}$'),
    ADD CONSTRAINT idempotency_keys_operation_format CHECK (operation ~ '^[A-Za-z][A-Za-z0-9_.]{0,63}$'),
    ADD CONSTRAINT idempotency_keys_hash_format CHECK (request_hash ~ '^[0-9a-f]{64}$'),
    ADD CONSTRAINT idempotency_keys_status CHECK (status IN ('in_progress', 'completed')),
    ADD CONSTRAINT idempotency_keys_completed_has_response CHECK (
      status = 'in_progress' OR (response_status IS NOT NULL AND completed_at IS NOT NULL AND resource_type IS NOT NULL AND resource_id IS NOT NULL)),
    ADD CONSTRAINT idempotency_keys_expiry_after_creation CHECK (expires_at > created_at)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('idempotency_keys');
}
