import type { Knex } from 'knex';

/**
 * The object types an endpoint may receive events about: those whose own GET the person or API
 * key that configured the endpoint may call (its role's rules, or the key's scopes). An event
 * about another object type gets no delivery to it. NULL (endpoints configured before) means
 * every type.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE webhook_endpoints ADD COLUMN object_types text[]`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE webhook_endpoints DROP COLUMN object_types`);
}
