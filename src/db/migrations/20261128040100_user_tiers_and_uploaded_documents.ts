import type { Knex } from 'knex';

/**
 * Who a customer is allowed to be (`users.tier`: tier_0 until an identity verification lifts
 * it) and the documents people and organisations upload (identity documents, selfies,
 * company papers), stored encrypted at rest: `ciphertext` is the AES-256-GCM envelope of the
 * file (src/pii-cipher.ts, its key id inside), never the file. An erased document keeps its
 * row (what was uploaded, when, by whom) without its bytes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE users
    ADD COLUMN tier text NOT NULL DEFAULT 'tier_0',
    ADD CONSTRAINT users_tier CHECK (tier IN ('tier_0', 'tier_1', 'tier_2'))`);

  await knex.schema.createTable('uploaded_documents', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('owner_type').notNullable();
    t.uuid('owner_id').notNullable();
    t.text('kind').notNullable();
    t.text('content_type').notNullable();
    t.integer('size_bytes').notNullable();
    t.text('key_id').notNullable();
    t.binary('ciphertext');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('erased_at', { useTz: true });
    t.index(['owner_type', 'owner_id', 'created_at'], 'uploaded_documents_owner_index');
  });
  await knex.raw(`ALTER TABLE uploaded_documents
    ADD CONSTRAINT uploaded_documents_owner_type CHECK (owner_type IN ('user', 'organization')),
    ADD CONSTRAINT uploaded_documents_kind CHECK (kind ~ '^[a-z][a-z0-9_]{0,39}$'),
    ADD CONSTRAINT uploaded_documents_content_type CHECK (content_type IN ('image/jpeg', 'image/png', 'application/pdf')),
    ADD CONSTRAINT uploaded_documents_size CHECK (size_bytes BETWEEN 1 AND 5242880),
    ADD CONSTRAINT uploaded_documents_bytes_or_erased CHECK ((ciphertext IS NULL) = (erased_at IS NOT NULL))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('uploaded_documents');
  await knex.raw('ALTER TABLE users DROP CONSTRAINT users_tier, DROP COLUMN tier');
}
