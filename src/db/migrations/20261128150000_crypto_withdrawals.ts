import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * Withdrawals of stablecoins to external addresses: the address book (an address is usable
 * from its active_at) and the withdrawals, each reserving its amount and network fee at once
 * in a holding account until it completes, fails or is canceled. write_apply writes both tables.
 */
export const FUNCTIONS = {
  write_apply: '7b3469a280b08d5d',
};

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('crypto_withdrawal_addresses', (t) => {
    t.uuid('id').primary();
    t.uuid('user_id').notNullable().references('users.id');
    t.string('asset', 10).notNullable().references('currencies.code');
    t.text('network').notNullable();
    t.text('address').notNullable();
    t.text('label').notNullable();
    t.text('memo');
    t.timestamp('active_at', { useTz: true }).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['user_id', 'created_at', 'id'], 'crypto_withdrawal_addresses_user_index');
  });

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
    t.text('status').notNullable();
    t.text('tx_hash');
    t.integer('confirmations').notNullable().defaultTo(0);
    t.integer('confirmations_required').notNullable();
    t.text('beneficiary_name');
    t.string('beneficiary_country', 2);
    t.text('failure_reason');
    t.uuid('reserve_posting_id').notNullable().references('postings.id');
    t.uuid('release_posting_id').references('postings.id');
    t.timestamp('broadcast_at', { useTz: true });
    t.timestamp('completed_at', { useTz: true });
    t.timestamp('failed_at', { useTz: true });
    t.timestamp('canceled_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['user_id', 'created_at', 'id'], 'crypto_withdrawals_user_index');
    t.index(['network', 'status'], 'crypto_withdrawals_network_status_index');
  });
  await knex.raw(`ALTER TABLE crypto_withdrawals
    ADD CONSTRAINT crypto_withdrawals_status CHECK (status IN ('created', 'queued', 'broadcast', 'confirming', 'completed', 'failed', 'canceled')),
    ADD CONSTRAINT crypto_withdrawals_amounts CHECK (amount_minor > 0 AND fee_minor >= 0),
    ADD CONSTRAINT crypto_withdrawals_released_when_final CHECK ((status IN ('completed', 'failed', 'canceled')) = (release_posting_id IS NOT NULL))`);

  const result = (await knex.raw(`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'events_subject_type' AND conrelid = 'events'::regclass`)) as { rows: Array<{ def: string }> };
  const current = [...(result.rows[0]?.def ?? '').matchAll(/'([a-z_]+)'/g)].map((match) => match[1] as string);
  const all = [...new Set([...current, 'crypto_withdrawal'])];
  await knex.raw(`ALTER TABLE events DROP CONSTRAINT IF EXISTS events_subject_type;
    ALTER TABLE events ADD CONSTRAINT events_subject_type CHECK (subject_type IN (${all.map((type) => `'${type}'`).join(', ')}))`);
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('crypto_withdrawals');
  await knex.schema.dropTable('crypto_withdrawal_addresses');
}
