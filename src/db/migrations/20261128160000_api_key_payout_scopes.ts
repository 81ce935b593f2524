import type { Knex } from 'knex';

/** A key may hold every scope, `payouts:read` and `payouts:write` included: 17 at most. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE api_keys
    DROP CONSTRAINT api_keys_scopes_present,
    ADD CONSTRAINT api_keys_scopes_present CHECK (cardinality(scopes) BETWEEN 1 AND 17)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE api_keys
    DROP CONSTRAINT api_keys_scopes_present,
    ADD CONSTRAINT api_keys_scopes_present CHECK (cardinality(scopes) BETWEEN 1 AND 15)`);
}
