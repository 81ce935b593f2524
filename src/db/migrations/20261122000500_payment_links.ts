import type { Knex } from 'knex';

/**
 * Payment links (one-off links and the permanent Checkout of a destination account) and the
 * payments made on the public payment page.
 *
 * What the database guarantees, whatever the timing of requests:
 * - one Checkout per destination account (unique partial index on kind = 'checkout');
 * - a link code is unique (and URL-safe, at least 22 base64url characters: 128 bits or more);
 * - a Checkout has no fixed amount and no expiry; a fixed amount excludes min/max bounds;
 * - one payment per form submission (unique (link_id, form_nonce): a double submit never
 *   creates two payments);
 * - a one-off link has at most one payment pending or succeeded (unique partial index);
 * - a succeeded payment has its ledger posting; a failed one has its failure reason.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('payment_links', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('organization_id').notNullable().references('organizations.id');
    t.text('kind').notNullable();
    t.text('code').notNullable();
    t.uuid('destination_account_id').notNullable().references('organization_accounts.id');
    t.specificType('currency', 'char(3)').notNullable().references('currencies.code');
    t.bigInteger('amount_minor');
    t.bigInteger('minimum_amount_minor');
    t.bigInteger('maximum_amount_minor');
    t.text('description');
    t.text('reference');
    t.boolean('require_signed_amount').notNullable().defaultTo(false);
    t.text('status').notNullable().defaultTo('active');
    t.timestamp('expires_at', { useTz: true });
    t.uuid('created_by').references('users.id');
    t.timestamp('deactivated_at', { useTz: true });
    t.timestamp('completed_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['code'], { indexName: 'payment_links_code_unique' });
    t.index(['organization_id', 'created_at', 'id'], 'payment_links_organization_index');
  });
  await knex.raw(`ALTER TABLE payment_links
    ADD CONSTRAINT payment_links_kind CHECK (kind IN ('link', 'checkout')),
    ADD CONSTRAINT payment_links_status CHECK (status IN ('active', 'inactive', 'expired', 'completed')),
    ADD CONSTRAINT payment_links_code_format CHECK (code ~ '^[A-Za-z0-9_-]{22,64}$'),
    ADD CONSTRAINT payment_links_amount_positive CHECK (amount_minor IS NULL OR amount_minor > 0),
    ADD CONSTRAINT payment_links_minimum_positive CHECK (minimum_amount_minor IS NULL OR minimum_amount_minor > 0),
    ADD CONSTRAINT payment_links_maximum_positive CHECK (maximum_amount_minor IS NULL OR maximum_amount_minor > 0),
    ADD CONSTRAINT payment_links_bounds_order CHECK (minimum_amount_minor IS NULL OR maximum_amount_minor IS NULL OR minimum_amount_minor <= maximum_amount_minor),
    ADD CONSTRAINT payment_links_fixed_or_bounds CHECK (amount_minor IS NULL OR (minimum_amount_minor IS NULL AND maximum_amount_minor IS NULL)),
    ADD CONSTRAINT payment_links_checkout_shape CHECK (kind = 'link' OR (amount_minor IS NULL AND expires_at IS NULL AND reference IS NULL)),
    ADD CONSTRAINT payment_links_description_length CHECK (description IS NULL OR length(description) BETWEEN 1 AND 500),
    ADD CONSTRAINT payment_links_reference_length CHECK (reference IS NULL OR length(reference) BETWEEN 1 AND 128)`);
  await knex.raw(
    `CREATE UNIQUE INDEX payment_links_one_checkout_per_account ON payment_links (destination_account_id) WHERE kind = 'checkout'`,
  );

  await knex.schema.createTable('payments', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('organization_id').notNullable().references('organizations.id');
    t.uuid('link_id').notNullable().references('payment_links.id');
    t.boolean('one_off').notNullable();
    t.uuid('destination_account_id').notNullable().references('organization_accounts.id');
    t.specificType('currency', 'char(3)').notNullable().references('currencies.code');
    t.bigInteger('amount_minor').notNullable();
    t.text('reference');
    t.text('method').notNullable();
    t.text('payer_last4').notNullable();
    t.text('status').notNullable().defaultTo('pending');
    t.text('failure_reason');
    // The sandbox's decision, applied when the payment settles (at once, or after a delay).
    t.text('sandbox_outcome').notNullable();
    t.timestamp('settle_after', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Idempotency key of the payment: the nonce of the signed form token.
    t.text('form_nonce').notNullable();
    t.uuid('posting_id').references('postings.id');
    t.timestamp('completed_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['link_id', 'form_nonce'], { indexName: 'payments_form_nonce_unique' });
    t.index(['organization_id', 'created_at', 'id'], 'payments_organization_index');
    t.index(['link_id'], 'payments_link_index');
    t.index(['organization_id', 'reference'], 'payments_reference_index');
  });
  await knex.raw(`ALTER TABLE payments
    ADD CONSTRAINT payments_amount_positive CHECK (amount_minor > 0),
    ADD CONSTRAINT payments_method CHECK (method IN ('mobile_money', 'card')),
    ADD CONSTRAINT payments_status CHECK (status IN ('pending', 'succeeded', 'failed')),
    ADD CONSTRAINT payments_payer_last4 CHECK (payer_last4 ~ '^[0-9]{4}$'),
    ADD CONSTRAINT payments_form_nonce CHECK (form_nonce ~ '^[A-Za-z0-9_-]{16,64}$'),
    ADD CONSTRAINT payments_reference_length CHECK (reference IS NULL OR length(reference) BETWEEN 1 AND 128),
    ADD CONSTRAINT payments_failure_reason CHECK ((status = 'failed') = (failure_reason IS NOT NULL)),
    ADD CONSTRAINT payments_succeeded_posted CHECK ((status = 'succeeded') = (posting_id IS NOT NULL)),
    ADD CONSTRAINT payments_completed_at CHECK ((status = 'pending') = (completed_at IS NULL)),
    ADD CONSTRAINT payments_sandbox_outcome CHECK (sandbox_outcome ~ '^(succeeded|failed:[a-z_]{1,40})$')`);
  await knex.raw(
    `CREATE UNIQUE INDEX payments_one_open_per_one_off_link ON payments (link_id) WHERE one_off AND status IN ('pending', 'succeeded')`,
  );
  await knex.raw(`CREATE INDEX payments_pending_settle_index ON payments (settle_after) WHERE status = 'pending'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('payments');
  await knex.schema.dropTable('payment_links');
}
