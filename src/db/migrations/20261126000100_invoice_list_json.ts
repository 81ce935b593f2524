import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * The invoices list renders its JSON in the database (parsing 25 columns per document,
 * building two objects per document and serialising them would be most of the list's API
 * CPU). `format_minor` (src/modules/ledger/sql/format_minor.sql) writes amounts as
 * formatMinor does. The three row types give `row_to_json` the contract's field names in the
 * contract's order, so a row renders as JSON.stringify renders presentDocument's object, byte
 * for byte (test/integration/invoice-list-json.test.ts). A field added to the contract's
 * Invoice needs a new row type (invoice_json_v2) in a new migration and the list's projection
 * (src/modules/invoices/invoice-repository.ts, DOCUMENT_JSON) pointed at it, the old type
 * dropped a release later: ALTER TYPE ... ADD ATTRIBUTE only appends, and would break the
 * instances still running the old projection during a rolling deploy.
 */
export const FUNCTIONS = {
  format_minor: '1d62cafbe41b2e10',
};

export async function up(knex: Knex): Promise<void> {
  await applyDatabaseFunctions(knex, FUNCTIONS);
  await knex.raw(`
    CREATE TYPE invoice_json_line_item AS (
      description jsonb, quantity integer, unit_amount text, tax_rate_bps integer, amount text, tax text
    );
    CREATE TYPE invoice_json_status_transitions AS (
      finalized_at text, paid_at text, voided_at text, marked_uncollectible_at text, accepted_at text, canceled_at text
    );
    CREATE TYPE invoice_json AS (
      id uuid, kind text, number text, status text, customer_id uuid, currency text, line_items json,
      subtotal text, tax text, total text, amount_due text, amount_credited text, memo text,
      issue_date text, due_date text, expires_at text, invoice_id uuid, credit_reason text,
      status_transitions invoice_json_status_transitions, created_at text, updated_at text
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TYPE IF EXISTS invoice_json; DROP TYPE IF EXISTS invoice_json_status_transitions; DROP TYPE IF EXISTS invoice_json_line_item');
  await knex.raw('DROP FUNCTION IF EXISTS format_minor(bigint, smallint)');
}
