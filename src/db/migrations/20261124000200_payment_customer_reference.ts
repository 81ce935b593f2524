import type { Knex } from 'knex';

/**
 * A reference in an unsigned payment-page URL is whatever the customer's
 * browser sent, so it is kept apart as `customer_reference` (a note, never matched against
 * orders). `reference` holds only references the merchant fixed: the link's own, or one a
 * signed URL carried; only those reserve an order (one pending or succeeded payment each).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('payments', (t) => {
    t.text('customer_reference');
  });
  await knex.raw(`ALTER TABLE payments
    ADD CONSTRAINT payments_customer_reference_length CHECK (customer_reference IS NULL OR length(customer_reference) BETWEEN 1 AND 128),
    ADD CONSTRAINT payments_one_reference_kind CHECK (reference IS NULL OR customer_reference IS NULL)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('payments', (t) => {
    t.dropColumn('customer_reference');
  });
}
