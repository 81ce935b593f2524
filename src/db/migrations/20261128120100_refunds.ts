import type { Knex } from 'knex';
import { setEventSubjects } from '../event-subjects';

/**
 * Refunds of payments: money an organisation gives back to the customer who paid it, out of the
 * ledger account the payment credited. A refund holds its amount when asked (`hold_posting_id`:
 * that account -> the refunds' transit account), so two refunds never spend the same money; the
 * rail's outcome then sends it out (`succeeded`: transit -> clearing) or back (`failed`: transit
 * -> the account), `settlement_posting_id`. Refunds and payments are event subjects.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('refunds', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id');
    t.uuid('payment_id').notNullable().references('payments.id');
    t.uuid('account_id').notNullable().references('ledger_accounts.id');
    t.specificType('currency', 'char(3)').notNullable().references('currencies.code');
    t.bigInteger('amount_minor').notNullable();
    t.text('reason').notNullable();
    t.text('status').notNullable();
    t.text('failure_code');
    t.uuid('requested_by_user_id').references('users.id');
    t.uuid('hold_posting_id').notNullable().references('postings.id');
    t.uuid('settlement_posting_id').references('postings.id');
    t.timestamp('settled_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
  });
  await knex.raw(`ALTER TABLE refunds
    ADD CONSTRAINT refunds_amount CHECK (amount_minor > 0),
    ADD CONSTRAINT refunds_reason CHECK (reason IN ('requested_by_customer', 'duplicate', 'fraudulent', 'other')),
    ADD CONSTRAINT refunds_status CHECK (status IN ('pending', 'succeeded', 'failed')),
    ADD CONSTRAINT refunds_settled CHECK ((status = 'pending') = (settlement_posting_id IS NULL))`);
  await knex.raw('CREATE INDEX refunds_payment_created ON refunds (payment_id, created_at DESC, id DESC)');
  await setEventSubjects(knex, (current) => [...new Set([...current, 'refund'])]);
}

export async function down(knex: Knex): Promise<void> {
  await setEventSubjects(knex, (current) => current.filter((type) => type !== 'refund'));
  await knex.schema.dropTable('refunds');
}
