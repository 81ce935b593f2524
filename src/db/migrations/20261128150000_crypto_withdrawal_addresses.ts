import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * The address book crypto withdrawals go to: an external address per row, checked for its
 * network when added and usable from its active_at. write_apply writes the table.
 */
export const FUNCTIONS = {
  write_apply: '1f6e08ea58da909b',
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

  await applyDatabaseFunctions(knex, FUNCTIONS);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('crypto_withdrawal_addresses');
}
