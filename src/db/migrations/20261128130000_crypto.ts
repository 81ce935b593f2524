import type { Knex } from 'knex';
import { setEventSubjects } from '../event-subjects';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * Stablecoins held beside local money. USDC and USDT become ledger currencies (exponent 6):
 * a currency code is no longer three letters only, so the currency columns of the ledger
 * (currencies, ledger_accounts, entries) become varchar(10); the other tables keep char(3)
 * (their foreign keys still reference currencies, and none of them holds a stablecoin).
 * Deposit addresses (one per user, asset and network), deposits (one per network, transaction
 * hash and output index, however often the network reports it), conversion quotes and
 * conversions. write_apply writes the four tables; format_minor writes exponents 5 and 6.
 */
export const FUNCTIONS = {
  write_apply: '5bd3a07c5b7d967d',
  format_minor: '805e3dd53d45048e',
};

const STABLECOINS: Array<[code: string, name: string]> = [
  ['USDC', 'USD Coin'],
  ['USDT', 'Tether USD'],
];

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE currencies DROP CONSTRAINT currencies_code_format, DROP CONSTRAINT currencies_exponent_range;
    ALTER TABLE currencies ALTER COLUMN code TYPE varchar(10);
    -- The trigger that keeps an account's currency fixed names the column: set again around the change.
    DROP TRIGGER ledger_accounts_fixed_terms ON ledger_accounts;
    ALTER TABLE ledger_accounts ALTER COLUMN currency TYPE varchar(10);
    CREATE TRIGGER ledger_accounts_fixed_terms BEFORE UPDATE OF currency, allow_negative ON ledger_accounts FOR EACH ROW
      WHEN (NEW.currency IS DISTINCT FROM OLD.currency OR NEW.allow_negative IS DISTINCT FROM OLD.allow_negative)
      EXECUTE FUNCTION ledger_refuse_write('the currency and allow_negative of a ledger account never change');
    ALTER TABLE entries ALTER COLUMN currency TYPE varchar(10);
    ALTER TABLE currencies
      ADD CONSTRAINT currencies_code_format CHECK (code ~ '^[A-Z][A-Z0-9]{2,9}$'),
      ADD CONSTRAINT currencies_exponent_range CHECK (exponent BETWEEN 0 AND 6)`);
  await knex('currencies').insert(STABLECOINS.map(([code, name]) => ({ code, exponent: 6, name })));

  await knex.schema.createTable('crypto_deposit_addresses', (t) => {
    t.uuid('id').primary();
    t.uuid('user_id').notNullable().references('users.id');
    t.string('asset', 10).notNullable().references('currencies.code');
    t.text('network').notNullable();
    t.text('address').notNullable();
    t.text('memo');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['user_id', 'asset', 'network'], { indexName: 'crypto_deposit_addresses_owner_unique' });
    t.unique(['network', 'address'], { indexName: 'crypto_deposit_addresses_address_unique' });
  });

  await knex.schema.createTable('crypto_deposits', (t) => {
    t.uuid('id').primary();
    t.uuid('user_id').notNullable().references('users.id');
    t.uuid('deposit_address_id').notNullable().references('crypto_deposit_addresses.id');
    t.string('asset', 10).notNullable().references('currencies.code');
    t.text('network').notNullable();
    t.text('address').notNullable();
    t.text('tx_hash').notNullable();
    t.integer('output_index').notNullable();
    t.bigInteger('amount_minor').notNullable();
    t.text('status').notNullable();
    t.integer('confirmations').notNullable();
    t.integer('confirmations_required').notNullable();
    t.uuid('credit_posting_id').references('postings.id');
    t.text('failure_reason');
    t.timestamp('detected_at', { useTz: true }).notNullable();
    t.timestamp('completed_at', { useTz: true });
    t.timestamp('reversed_at', { useTz: true });
    t.timestamp('failed_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Exactly once per output of a transaction, however often and in whatever order it is reported.
    t.unique(['network', 'tx_hash', 'output_index'], { indexName: 'crypto_deposits_transfer_unique' });
    t.index(['user_id', 'created_at', 'id'], 'crypto_deposits_user_index');
  });
  await knex.raw(`ALTER TABLE crypto_deposits
    ADD CONSTRAINT crypto_deposits_status CHECK (status IN ('detected', 'confirming', 'completed', 'failed', 'reversed')),
    ADD CONSTRAINT crypto_deposits_amount_positive CHECK (amount_minor > 0),
    ADD CONSTRAINT crypto_deposits_output_index CHECK (output_index >= 0),
    ADD CONSTRAINT crypto_deposits_confirmations CHECK (confirmations >= 0 AND confirmations_required > 0),
    ADD CONSTRAINT crypto_deposits_credited_when_completed CHECK ((status = 'completed') = (credit_posting_id IS NOT NULL))`);

  await knex.schema.createTable('crypto_quotes', (t) => {
    t.uuid('id').primary();
    t.uuid('user_id').notNullable().references('users.id');
    t.string('from_currency', 10).notNullable().references('currencies.code');
    t.string('to_currency', 10).notNullable().references('currencies.code');
    t.bigInteger('from_amount_minor').notNullable();
    t.bigInteger('to_amount_minor').notNullable();
    t.bigInteger('fee_minor').notNullable();
    t.text('rate').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['user_id', 'created_at'], 'crypto_quotes_user_index');
  });
  await knex.raw(`ALTER TABLE crypto_quotes
    ADD CONSTRAINT crypto_quotes_amounts CHECK (from_amount_minor > 0 AND to_amount_minor > 0 AND fee_minor >= 0 AND fee_minor < from_amount_minor),
    ADD CONSTRAINT crypto_quotes_two_currencies CHECK (from_currency <> to_currency)`);

  await knex.schema.createTable('crypto_conversions', (t) => {
    t.uuid('id').primary();
    t.uuid('user_id').notNullable().references('users.id');
    // A quote is used once.
    t.uuid('quote_id').notNullable().unique({ indexName: 'crypto_conversions_quote_unique' }).references('crypto_quotes.id');
    t.string('from_currency', 10).notNullable().references('currencies.code');
    t.string('to_currency', 10).notNullable().references('currencies.code');
    t.bigInteger('from_amount_minor').notNullable();
    t.bigInteger('to_amount_minor').notNullable();
    t.bigInteger('fee_minor').notNullable();
    t.text('rate').notNullable();
    t.text('status').notNullable();
    t.uuid('posting_id').notNullable().references('postings.id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['user_id', 'created_at', 'id'], 'crypto_conversions_user_index');
  });
  await knex.raw(`ALTER TABLE crypto_conversions ADD CONSTRAINT crypto_conversions_status CHECK (status IN ('completed'))`);

  await setEventSubjects(knex, (current) => [...new Set([...current, 'crypto_deposit', 'crypto_conversion'])]);
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('crypto_conversions');
  await knex.schema.dropTable('crypto_quotes');
  await knex.schema.dropTable('crypto_deposits');
  await knex.schema.dropTable('crypto_deposit_addresses');
  // Stablecoin accounts and entries, once written, stay (the ledger is append-only): the wider columns stay with them.
}
