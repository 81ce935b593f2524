import type { Knex } from 'knex';

/**
 * A reference names one order: on a link, at most one payment per reference may be pending or
 * succeeded, so a customer who goes back and submits a fresh form for an order already paid
 * is refused instead of paying twice. Failed payments do not count (the customer may retry).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `CREATE UNIQUE INDEX payments_one_open_per_reference ON payments (link_id, reference) WHERE reference IS NOT NULL AND status IN ('pending', 'succeeded')`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX payments_one_open_per_reference');
}
