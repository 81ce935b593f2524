import type { Knex } from 'knex';
import { setEventSubjects } from '../event-subjects';

/**
 * Payouts of organisations: money sent out of an organisation account to a bank account or a
 * mobile-money wallet. A payout reserves its amount when requested (`hold_posting_id`: the
 * account -> the payouts' transit account), so two payouts never spend the same money; the
 * rail's outcome then sends it out (`paid`: transit -> clearing) or back (`failed`, or
 * `canceled` before approval: transit -> the account), `settlement_posting_id`. At or above the
 * organisation's approval threshold (`organizations.payout_approval_threshold_xof`, null: the
 * default) a payout waits in `pending_approval` for a second person. Payouts are event subjects.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('payouts', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id');
    t.uuid('account_id').notNullable().references('organization_accounts.id');
    t.uuid('ledger_account_id').notNullable().references('ledger_accounts.id');
    t.specificType('currency', 'char(3)').notNullable().references('currencies.code');
    t.bigInteger('amount_minor').notNullable();
    t.jsonb('destination').notNullable();
    t.text('reference');
    t.text('status').notNullable();
    t.boolean('requires_approval').notNullable();
    t.text('failure_code');
    t.uuid('requested_by_user_id').references('users.id');
    t.uuid('approved_by_user_id').references('users.id');
    t.uuid('hold_posting_id').notNullable().references('postings.id');
    t.uuid('settlement_posting_id').references('postings.id');
    t.timestamp('settled_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
  });
  await knex.raw(`ALTER TABLE payouts
    ADD CONSTRAINT payouts_amount CHECK (amount_minor > 0),
    ADD CONSTRAINT payouts_status CHECK (status IN ('pending_approval', 'processing', 'paid', 'failed', 'canceled')),
    ADD CONSTRAINT payouts_settled CHECK ((status IN ('paid', 'failed', 'canceled')) = (settlement_posting_id IS NOT NULL))`);
  await knex.raw('CREATE INDEX payouts_organization_created ON payouts (organization_id, created_at DESC, id DESC)');
  await knex.raw('ALTER TABLE organizations ADD COLUMN payout_approval_threshold_xof bigint CHECK (payout_approval_threshold_xof > 0)');
  await setEventSubjects(knex, (current) => [...new Set([...current, 'payout'])]);
}

export async function down(knex: Knex): Promise<void> {
  await setEventSubjects(knex, (current) => current.filter((type) => type !== 'payout'));
  await knex.raw('ALTER TABLE organizations DROP COLUMN payout_approval_threshold_xof');
  await knex.schema.dropTable('payouts');
}
