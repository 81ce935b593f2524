import type { Knex } from 'knex';

/**
 * Billing documents: customers, invoices, quotes and credit notes, and the per-organisation
 * number counters.
 *
 * What the database itself guarantees (the service checks the same rules first, with clear
 * errors; these are the last line of defence):
 * - a status exists for the document's kind (invoice, quote and credit-note lifecycles);
 * - a document has a number exactly when it is no longer a draft, and a number is unique per
 *   organisation and kind (the counter row, locked by its upsert, makes numbers gapless);
 * - amounts are non-negative bigint minor units, total = subtotal + tax, and an invoice is
 *   never credited beyond its total;
 * - a document's customer and related invoice belong to the same organisation (composite
 *   foreign keys), so no query can link across organisations.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('customers', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('email');
    t.text('phone');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['id', 'organization_id'], { indexName: 'customers_id_organization_unique' });
    t.index(['organization_id', 'created_at'], 'customers_organization_index');
  });
  await knex.raw(`ALTER TABLE customers
    ADD CONSTRAINT customers_name_length CHECK (length(name) BETWEEN 1 AND 200),
    ADD CONSTRAINT customers_email_length CHECK (email IS NULL OR length(email) BETWEEN 3 AND 254),
    ADD CONSTRAINT customers_phone_e164 CHECK (phone IS NULL OR phone ~ '^\\+[1-9][0-9]{6,14}$')`);

  await knex.schema.createTable('document_number_counters', (t) => {
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('kind').notNullable();
    t.integer('year').notNullable();
    t.integer('last_number').notNullable();
    t.primary(['organization_id', 'kind', 'year']);
  });
  await knex.raw(`ALTER TABLE document_number_counters
    ADD CONSTRAINT document_number_counters_kind CHECK (kind IN ('invoice', 'quote', 'credit_note')),
    ADD CONSTRAINT document_number_counters_year CHECK (year BETWEEN 2000 AND 9999),
    ADD CONSTRAINT document_number_counters_last_number CHECK (last_number BETWEEN 1 AND 999999999)`);

  await knex.schema.createTable('documents', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('kind').notNullable();
    t.text('status').notNullable();
    t.text('number');
    t.uuid('customer_id');
    t.specificType('currency', 'char(3)').notNullable().references('currencies.code');
    // [{description, quantity, unit_amount_minor, tax_rate_bps, amount_minor, tax_minor}],
    // amounts as strings of digits (bigint minor units), never JSON numbers.
    t.jsonb('line_items').notNullable().defaultTo('[]');
    t.bigInteger('subtotal_minor').notNullable().defaultTo(0);
    t.bigInteger('tax_minor').notNullable().defaultTo(0);
    t.bigInteger('total_minor').notNullable().defaultTo(0);
    // An invoice: the sum of its issued (not void) credit notes, kept with the invoice row
    // locked, so a credit note can never exceed what remains.
    t.bigInteger('credited_minor').notNullable().defaultTo(0);
    t.text('memo');
    t.date('issue_date');
    t.date('due_date');
    t.timestamp('expires_at', { useTz: true });
    // A credit note: the invoice it credits. A quote: the invoice it became once accepted.
    t.uuid('invoice_id');
    t.text('credit_reason');
    t.timestamp('finalized_at', { useTz: true });
    t.timestamp('paid_at', { useTz: true });
    t.timestamp('voided_at', { useTz: true });
    t.timestamp('marked_uncollectible_at', { useTz: true });
    t.timestamp('accepted_at', { useTz: true });
    t.timestamp('canceled_at', { useTz: true });
    t.uuid('created_by').references('users.id').onDelete('SET NULL');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['id', 'organization_id'], { indexName: 'documents_id_organization_unique' });
    t.unique(['organization_id', 'kind', 'number'], { indexName: 'documents_number_unique' });
    t.foreign(['customer_id', 'organization_id'], 'documents_customer_fk').references(['id', 'organization_id']).inTable('customers');
    t.foreign(['invoice_id', 'organization_id'], 'documents_invoice_fk').references(['id', 'organization_id']).inTable('documents');
  });
  await knex.raw(`ALTER TABLE documents
    ADD CONSTRAINT documents_kind CHECK (kind IN ('invoice', 'quote', 'credit_note')),
    ADD CONSTRAINT documents_status_for_kind CHECK (
      (kind = 'invoice' AND status IN ('draft', 'open', 'paid', 'void', 'uncollectible'))
      OR (kind = 'quote' AND status IN ('draft', 'open', 'accepted', 'canceled'))
      OR (kind = 'credit_note' AND status IN ('issued', 'void'))),
    ADD CONSTRAINT documents_number_when_final CHECK ((status = 'draft') = (number IS NULL)),
    ADD CONSTRAINT documents_number_format CHECK (number IS NULL OR number ~ '^(INV|QUO|CN)-[0-9]{4}-[0-9]{6,9}$'),
    ADD CONSTRAINT documents_amounts CHECK (subtotal_minor >= 0 AND tax_minor >= 0 AND total_minor = subtotal_minor + tax_minor),
    ADD CONSTRAINT documents_credited CHECK (credited_minor >= 0 AND credited_minor <= total_minor AND (kind = 'invoice' OR credited_minor = 0)),
    ADD CONSTRAINT documents_line_items_array CHECK (jsonb_typeof(line_items) = 'array'),
    ADD CONSTRAINT documents_memo_length CHECK (memo IS NULL OR length(memo) <= 1000),
    ADD CONSTRAINT documents_invoice_link CHECK (
      (kind = 'invoice' AND invoice_id IS NULL)
      OR (kind = 'credit_note' AND invoice_id IS NOT NULL)
      OR (kind = 'quote' AND (invoice_id IS NULL) = (status <> 'accepted'))),
    ADD CONSTRAINT documents_credit_reason CHECK (
      (kind = 'credit_note') = (credit_reason IS NOT NULL)
      AND (credit_reason IS NULL OR credit_reason IN ('duplicate', 'fraudulent', 'order_change', 'product_unsatisfactory')))`);

  // The list (newest first, cursor on (created_at, id)) and its filters.
  await knex.raw(`
    CREATE INDEX documents_list_index ON documents (organization_id, created_at DESC, id DESC);
    CREATE INDEX documents_list_kind_index ON documents (organization_id, kind, created_at DESC, id DESC);
    CREATE INDEX documents_list_status_index ON documents (organization_id, status, created_at DESC, id DESC);
    CREATE INDEX documents_list_customer_index ON documents (organization_id, customer_id, created_at DESC, id DESC) WHERE customer_id IS NOT NULL;
    CREATE INDEX documents_credit_notes_index ON documents (invoice_id) WHERE kind = 'credit_note';
    CREATE INDEX documents_open_quotes_expiry_index ON documents (organization_id, expires_at)
      WHERE kind = 'quote' AND status = 'open' AND expires_at IS NOT NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('documents');
  await knex.schema.dropTable('document_number_counters');
  await knex.schema.dropTable('customers');
}
