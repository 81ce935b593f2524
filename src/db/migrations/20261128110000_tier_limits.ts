import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * Tier limits enforced with the movement. `limit_policies` holds the caps of each currency and
 * tier, written at boot from src/modules/limits/tier-policy.json (the file is the source; the
 * table is what ledger_post reads under its account locks). Each ledger account keeps its
 * running usage beside its balance: this UTC month's inflow and this UTC day's outflow, each
 * with the period it belongs to (a counter of an older period reads as zero). Only ledger_post
 * moves the counters, as it moves the balance. `ledger_post` checks and counts; `write_apply`
 * and `transfer_create` carry its LimitExceeded refusal to their callers.
 */
export const FUNCTIONS = {
  ledger_post: '60eafccf9e842e25',
  write_apply: 'a9d935b1b94d97f7',
  transfer_create: '0d3210ec515e2add',
};

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE limit_policies (
      currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
      tier text NOT NULL CHECK (tier IN ('tier_0', 'tier_1', 'tier_2', 'unverified', 'verified')),
      balance_minor bigint NOT NULL CHECK (balance_minor >= 0),
      monthly_inflow_minor bigint NOT NULL CHECK (monthly_inflow_minor >= 0),
      daily_outflow_minor bigint NOT NULL CHECK (daily_outflow_minor >= 0),
      per_transaction_minor bigint NOT NULL CHECK (per_transaction_minor >= 0),
      version text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (currency, tier)
    );
    ALTER TABLE ledger_accounts
      ADD COLUMN inflow_month date,
      ADD COLUMN inflow_month_minor bigint NOT NULL DEFAULT 0,
      ADD COLUMN outflow_day date,
      ADD COLUMN outflow_day_minor bigint NOT NULL DEFAULT 0;
    CREATE TRIGGER ledger_accounts_usage_by_ledger_post BEFORE UPDATE OF inflow_month, inflow_month_minor, outflow_day, outflow_day_minor ON ledger_accounts FOR EACH STATEMENT
      WHEN (current_setting('ledger.posting', true) IS DISTINCT FROM 'on')
      EXECUTE FUNCTION ledger_refuse_write('the limits'' usage of a ledger account moves only with its balance, through ledger_post()');
  `);
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

export async function down(knex: Knex): Promise<void> {
  // ledger_post, write_apply and transfer_create keep their newer text, which needs what this drops: migrate down past this only to drop the schema.
  await knex.raw(`
    DROP TRIGGER IF EXISTS ledger_accounts_usage_by_ledger_post ON ledger_accounts;
    ALTER TABLE ledger_accounts DROP COLUMN inflow_month, DROP COLUMN inflow_month_minor, DROP COLUMN outflow_day, DROP COLUMN outflow_day_minor;
    DROP TABLE limit_policies;
  `);
}
