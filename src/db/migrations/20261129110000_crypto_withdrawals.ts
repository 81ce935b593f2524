import type { Knex } from 'knex';
import { setEventSubjects } from '../event-subjects';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * Crypto withdrawals: an amount sent from a user's stablecoin wallet to an address of the
 * user's address book, with the network's fee. The amount and the fee are reserved when the
 * withdrawal is requested (`reserve_posting_id`: the wallet -> the withdrawals' transit
 * account); its settlement (`settlement_posting_id`) sends them on to the network when it
 * completes, or back to the wallet when it fails or is canceled. Withdrawals are event
 * subjects. write_apply writes the table.
 */
export const FUNCTIONS = {
  write_apply: '7b3469a280b08d5d',
};

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('crypto_withdrawals', (t) => {
    t.uuid('id').primary();
    t.uuid('user_id').notNullable().references('users.id');
    t.uuid('withdrawal_address_id').notNullable().references('crypto_withdrawal_addresses.id');
    t.string('asset', 10).notNullable().references('currencies.code');
    t.text('network').notNullable();
    t.text('address').notNullable();
    t.text('memo');
    t.bigInteger('amount_minor').notNullable();
    t.bigInteger('fee_minor').notNullable();
    t.jsonb('beneficiary');
    t.text('status').notNullable();
    t.text('tx_hash');
    t.integer('confirmations').notNullable().defaultTo(0);
    t.integer('confirmations_required').notNullable();
    t.text('failure_reason');
    t.uuid('reserve_posting_id').notNullable().references('postings.id');
    t.uuid('settlement_posting_id').references('postings.id');
    t.timestamp('broadcast_at', { useTz: true });
    t.timestamp('completed_at', { useTz: true });
    t.timestamp('failed_at', { useTz: true });
    t.timestamp('canceled_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['user_id', 'created_at', 'id'], 'crypto_withdrawals_user_index');
    t.index(['status'], 'crypto_withdrawals_status_index');
  });
  await knex.raw(`ALTER TABLE crypto_withdrawals
    ADD CONSTRAINT crypto_withdrawals_status CHECK (status IN ('created', 'queued', 'broadcast', 'confirming', 'completed', 'failed', 'canceled')),
    ADD CONSTRAINT crypto_withdrawals_amounts CHECK (amount_minor > 0 AND fee_minor >= 0),
    ADD CONSTRAINT crypto_withdrawals_confirmations CHECK (confirmations >= 0 AND confirmations_required > 0),
    ADD CONSTRAINT crypto_withdrawals_broadcast_hash CHECK (status IN ('created', 'queued', 'canceled') OR tx_hash IS NOT NULL OR status = 'failed'),
    ADD CONSTRAINT crypto_withdrawals_settled CHECK ((status IN ('completed', 'failed', 'canceled')) = (settlement_posting_id IS NOT NULL))`);
  await setEventSubjects(knex, (current) => [...new Set([...current, 'crypto_withdrawal'])]);
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

export async function down(knex: Knex): Promise<void> {
  await setEventSubjects(knex, (current) => current.filter((type) => type !== 'crypto_withdrawal'));
  await knex.schema.dropTable('crypto_withdrawals');
}
