import type { Knex } from 'knex';

/**
 * Escrow transactions between a buyer and a seller. The money of an escrow moves only
 * through two ledger postings, each at most once per escrow ((kind, reference) is unique in
 * `postings`): `escrow.funding` (buyer wallet -> the platform's escrow holding account of
 * the currency) and `escrow.settlement` (holding -> seller, fee account and/or buyer).
 *
 * The fee is agreed at creation (`fee_bps`, `fee_minor` and each party's share) and charged
 * only by a settlement that pays the seller. `settled_*` record what the settlement paid.
 * `auto_release_at` is when the automatic release job may release a delivered escrow (the
 * end of its inspection period, pushed back when a release attempt failed).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('escrows', (t) => {
    t.uuid('id').primary();
    t.uuid('buyer_user_id').notNullable().references('users.id');
    t.uuid('seller_user_id').notNullable().references('users.id');
    t.uuid('created_by_user_id').notNullable().references('users.id');
    t.text('buyer_identifier').notNullable();
    t.text('seller_identifier').notNullable();
    t.text('status').notNullable();
    t.specificType('currency', 'char(3)').notNullable();
    t.bigInteger('amount_minor').notNullable();
    t.integer('fee_bps').notNullable();
    t.text('fee_payer').notNullable();
    t.bigInteger('fee_minor').notNullable();
    t.bigInteger('buyer_fee_minor').notNullable();
    t.bigInteger('seller_fee_minor').notNullable();
    t.text('description').notNullable();
    t.text('reference');
    t.integer('inspection_period_seconds').notNullable();
    t.text('tracking_reference');
    t.text('delivery_note');
    t.text('dispute_reason');
    t.text('resolution_outcome');
    t.bigInteger('resolution_seller_amount_minor');
    t.text('resolution_note');
    t.uuid('resolved_by_user_id').references('users.id');
    t.bigInteger('settled_to_seller_minor');
    t.bigInteger('settled_to_buyer_minor');
    t.bigInteger('settled_fee_minor');
    t.uuid('funding_posting_id').references('postings.id');
    t.uuid('settlement_posting_id').references('postings.id');
    t.timestamp('funded_at', { useTz: true });
    t.timestamp('delivered_at', { useTz: true });
    t.timestamp('inspection_ends_at', { useTz: true });
    t.timestamp('auto_release_at', { useTz: true });
    t.timestamp('accepted_at', { useTz: true });
    t.timestamp('disputed_at', { useTz: true });
    t.timestamp('resolved_at', { useTz: true });
    t.timestamp('released_at', { useTz: true });
    t.timestamp('refunded_at', { useTz: true });
    t.timestamp('canceled_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
  });
  await knex.raw(`ALTER TABLE escrows
    ADD CONSTRAINT escrows_status CHECK (status IN ('awaiting_funding', 'funded', 'delivered', 'accepted', 'disputed', 'released', 'refunded', 'canceled')),
    ADD CONSTRAINT escrows_parties_differ CHECK (buyer_user_id <> seller_user_id),
    ADD CONSTRAINT escrows_creator_is_party CHECK (created_by_user_id IN (buyer_user_id, seller_user_id)),
    ADD CONSTRAINT escrows_currency_format CHECK (currency ~ '^[A-Z]{3}$'),
    ADD CONSTRAINT escrows_amount_positive CHECK (amount_minor > 0),
    ADD CONSTRAINT escrows_fee_bps CHECK (fee_bps BETWEEN 0 AND 10000),
    ADD CONSTRAINT escrows_fee_payer CHECK (fee_payer IN ('buyer', 'seller', 'split')),
    ADD CONSTRAINT escrows_fee_shares CHECK (buyer_fee_minor >= 0 AND seller_fee_minor >= 0 AND buyer_fee_minor + seller_fee_minor = fee_minor AND fee_minor <= amount_minor),
    ADD CONSTRAINT escrows_inspection_period CHECK (inspection_period_seconds BETWEEN 86400 AND 2592000),
    ADD CONSTRAINT escrows_description_length CHECK (length(description) BETWEEN 1 AND 1000),
    ADD CONSTRAINT escrows_reference_length CHECK (reference IS NULL OR length(reference) BETWEEN 1 AND 128),
    ADD CONSTRAINT escrows_resolution_outcome CHECK (resolution_outcome IS NULL OR resolution_outcome IN ('release', 'refund', 'split')),
    ADD CONSTRAINT escrows_funded_has_posting CHECK ((status IN ('awaiting_funding', 'canceled')) = (funding_posting_id IS NULL)),
    ADD CONSTRAINT escrows_settled_has_posting CHECK ((status IN ('released', 'refunded')) = (settlement_posting_id IS NOT NULL)),
    ADD CONSTRAINT escrows_delivered_has_inspection CHECK (status <> 'delivered' OR (inspection_ends_at IS NOT NULL AND auto_release_at IS NOT NULL))`);
  await knex.raw(`CREATE INDEX escrows_buyer_listing ON escrows (buyer_user_id, created_at DESC, id DESC)`);
  await knex.raw(`CREATE INDEX escrows_seller_listing ON escrows (seller_user_id, created_at DESC, id DESC)`);
  await knex.raw(`CREATE INDEX escrows_status_listing ON escrows (status, created_at DESC, id DESC)`);
  await knex.raw(`CREATE INDEX escrows_release_due ON escrows (auto_release_at, id) WHERE status = 'delivered'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('escrows');
}
