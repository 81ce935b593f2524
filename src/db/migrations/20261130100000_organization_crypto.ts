import type { Knex } from 'knex';

/**
 * Organisations hold and convert stablecoins. A quote and a conversion belong to a user or to an
 * organisation, never both; an organisation's names the account of the fiat side (its
 * `organization_accounts` row), the stablecoin side being the organisation's own stablecoin
 * ledger account (kind org_account). The tier policy caps stablecoins too (USDC, USDT: four
 * letters), and a key may hold the two crypto scopes (19 at most).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE crypto_quotes
      ALTER COLUMN user_id DROP NOT NULL,
      ADD COLUMN organization_id uuid REFERENCES organizations(id),
      ADD COLUMN account_id uuid REFERENCES organization_accounts(id),
      ADD CONSTRAINT crypto_quotes_one_owner CHECK (num_nonnulls(user_id, organization_id) = 1),
      ADD CONSTRAINT crypto_quotes_account_of_organization CHECK (account_id IS NULL OR organization_id IS NOT NULL);
    CREATE INDEX crypto_quotes_organization_index ON crypto_quotes (organization_id, created_at) WHERE organization_id IS NOT NULL;
    ALTER TABLE crypto_conversions
      ALTER COLUMN user_id DROP NOT NULL,
      ADD COLUMN organization_id uuid REFERENCES organizations(id),
      ADD COLUMN account_id uuid REFERENCES organization_accounts(id),
      ADD CONSTRAINT crypto_conversions_one_owner CHECK (num_nonnulls(user_id, organization_id) = 1),
      ADD CONSTRAINT crypto_conversions_account_of_organization CHECK (account_id IS NULL OR organization_id IS NOT NULL);
    CREATE INDEX crypto_conversions_organization_index ON crypto_conversions (organization_id, created_at, id) WHERE organization_id IS NOT NULL;
    ALTER TABLE limit_policies
      DROP CONSTRAINT limit_policies_currency_check,
      ADD CONSTRAINT limit_policies_currency_check CHECK (currency ~ '^[A-Z][A-Z0-9]{2,9}$');
    ALTER TABLE api_keys
      DROP CONSTRAINT api_keys_scopes_present,
      ADD CONSTRAINT api_keys_scopes_present CHECK (cardinality(scopes) BETWEEN 1 AND 19);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE api_keys
      DROP CONSTRAINT api_keys_scopes_present,
      ADD CONSTRAINT api_keys_scopes_present CHECK (cardinality(scopes) BETWEEN 1 AND 17);
    DELETE FROM limit_policies WHERE currency !~ '^[A-Z]{3}$';
    ALTER TABLE limit_policies
      DROP CONSTRAINT limit_policies_currency_check,
      ADD CONSTRAINT limit_policies_currency_check CHECK (currency ~ '^[A-Z]{3}$');
    ALTER TABLE crypto_conversions DROP COLUMN organization_id, DROP COLUMN account_id;
    ALTER TABLE crypto_quotes DROP COLUMN organization_id, DROP COLUMN account_id;
  `);
}
