import type { Knex } from 'knex';
import { expect } from 'vitest';
import { reconcile } from '../../src/modules/ledger';
import type { InvariantViolation } from '../../src/modules/ledger';

/**
 * Proves the ledger invariants over the whole database (every file's rows, which is the
 * point: no test may leave money created, lost or unbalanced): the entries of each currency
 * sum to zero, every posting balances, every balance equals the sum of its entries and no
 * account that may not go negative is negative.
 */
export async function expectLedgerInvariants(knex: Knex): Promise<void> {
  const violations = await reconcile(knex);
  expect(violations.map(describe)).toEqual([]);
}

function describe(violation: InvariantViolation): string {
  return JSON.stringify(violation, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
}

/** Current balance (minor units) of one ledger account. */
export async function balanceOf(knex: Knex, accountId: string): Promise<bigint> {
  const row = await knex('ledger_accounts').where({ id: accountId }).first('balance_minor');
  if (!row) throw new Error(`no ledger account ${accountId}`);
  return BigInt(row.balance_minor as string);
}
