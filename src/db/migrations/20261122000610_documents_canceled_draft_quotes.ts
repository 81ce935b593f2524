import type { Knex } from 'knex';

/**
 * A draft quote can be canceled before it is ever finalised, so it never gets a number: a
 * number is required once finalised, forbidden on a draft, and optional on a canceled quote.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE documents
    DROP CONSTRAINT documents_number_when_final,
    ADD CONSTRAINT documents_number_when_final CHECK (
      (status = 'draft' AND number IS NULL)
      OR (status = 'canceled')
      OR (status NOT IN ('draft', 'canceled') AND number IS NOT NULL))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE documents
    DROP CONSTRAINT documents_number_when_final,
    ADD CONSTRAINT documents_number_when_final CHECK ((status = 'draft') = (number IS NULL))`);
}
