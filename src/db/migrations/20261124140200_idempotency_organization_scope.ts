import type { Knex } from 'knex';

/**
 * Idempotency keys of an organisation: an API key's Idempotency-Key is scoped to its
 * organisation and the operation, so every key of one organisation shares them. A row belongs
 * to a user or to an organisation, never both; each owner has its own uniqueness (NULLs never
 * collide in a unique constraint).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE idempotency_keys
    ALTER COLUMN user_id DROP NOT NULL,
    ADD COLUMN organization_id uuid REFERENCES organizations (id) ON DELETE CASCADE,
    ADD CONSTRAINT idempotency_keys_one_owner CHECK (num_nonnulls(user_id, organization_id) = 1),
    ADD CONSTRAINT idempotency_keys_organization_scope_unique UNIQUE (organization_id, operation, key)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DELETE FROM idempotency_keys WHERE organization_id IS NOT NULL;
    ALTER TABLE idempotency_keys
      DROP CONSTRAINT idempotency_keys_organization_scope_unique,
      DROP CONSTRAINT idempotency_keys_one_owner,
      DROP COLUMN organization_id,
      ALTER COLUMN user_id SET NOT NULL`);
}
