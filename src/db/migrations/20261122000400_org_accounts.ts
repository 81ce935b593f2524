import type { Knex } from 'knex';

/**
 * Organisation (foreign-currency) accounts. Each one has its own ledger account of kind
 * `org_account` (owner_type organization, owner_id the organisation, external_ref the
 * organisation account's id), so an organisation may hold several accounts in one currency.
 *
 * What the database guarantees:
 * - the ledger account has the same currency as the organisation account (composite foreign
 *   key onto ledger_accounts (id, currency));
 * - one ledger account backs at most one organisation account (unique ledger_account_id);
 * - statuses, holder types and the stored account number / IBAN formats are checked.
 *
 * The account number and IBAN are stored in full (normalised: upper case, no spaces); the
 * API only ever returns them masked.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('organization_accounts', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('organization_id').notNullable().references('organizations.id');
    t.specificType('currency', 'char(3)').notNullable().references('currencies.code');
    t.text('status').notNullable().defaultTo('active');
    t.text('holder_type').notNullable().defaultTo('business');
    t.text('label').notNullable();
    t.text('bank_name');
    t.text('account_number');
    t.text('iban');
    t.uuid('ledger_account_id').notNullable();
    t.timestamps(true, true);
    t.unique(['ledger_account_id'], { indexName: 'organization_accounts_ledger_account_unique' });
    t.foreign(['ledger_account_id', 'currency'], 'organization_accounts_ledger_account_fk')
      .references(['id', 'currency'])
      .inTable('ledger_accounts');
    t.index(['organization_id', 'created_at', 'id'], 'organization_accounts_organization_index');
  });
  await knex.raw(`ALTER TABLE organization_accounts
    ADD CONSTRAINT organization_accounts_status CHECK (status IN ('active', 'inactive', 'pending', 'closed')),
    ADD CONSTRAINT organization_accounts_holder_type CHECK (holder_type IN ('business', 'individual')),
    ADD CONSTRAINT organization_accounts_label CHECK (length(label) BETWEEN 1 AND 100),
    ADD CONSTRAINT organization_accounts_bank_name CHECK (bank_name IS NULL OR length(bank_name) BETWEEN 1 AND 140),
    ADD CONSTRAINT organization_accounts_account_number CHECK (account_number IS NULL OR account_number ~ '^[0-9A-Z]{4,34}$'),
    ADD CONSTRAINT organization_accounts_iban CHECK (iban IS NULL OR iban ~ '^[A-Z]{2}[0-9]{2}[0-9A-Z]{11,30}$')`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('organization_accounts');
}
