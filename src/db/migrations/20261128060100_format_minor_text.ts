import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * `format_minor` (src/modules/ledger/sql/format_minor.sql) pinned to its current text, whose
 * comment says why the function is not STRICT. Its body, arguments and result are those
 * 20261126000100_invoice_list_json created: applying it changes nothing a query sees.
 */
export const FUNCTIONS = {
  format_minor: 'c95e479f94c962e6',
};

export async function up(knex: Knex): Promise<void> {
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

export async function down(): Promise<void> {
  // The previous text differs only in a comment: nothing to undo.
}
