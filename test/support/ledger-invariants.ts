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

export interface PostedEntry {
  /** The account's kind: wallet, rail_transit, external_clearing, org_account... */
  account: string;
  /** Its owner (a user or an organisation), null for platform accounts. */
  owner: string | null;
  currency: string;
  /** Signed minor units: negative debits, positive credits. */
  amount: bigint;
}

/** The entries of the posting (kind, reference), ordered by account kind then amount; [] when there is none. */
export async function postingEntries(knex: Knex, kind: string, reference: string): Promise<PostedEntry[]> {
  const rows = await knex('entries as e')
    .join('postings as p', 'p.id', 'e.posting_id')
    .join('ledger_accounts as a', 'a.id', 'e.account_id')
    .where({ 'p.kind': kind, 'p.reference': reference })
    .select('a.kind as account', 'a.owner_id as owner', 'e.currency', 'e.amount_minor');
  return rows
    .map((row: { account: string; owner: string | null; currency: string; amount_minor: string | number }) => ({
      account: row.account,
      owner: row.owner,
      currency: row.currency,
      amount: BigInt(row.amount_minor),
    }))
    .sort((a, b) => a.account.localeCompare(b.account) || (a.amount < b.amount ? -1 : a.amount > b.amount ? 1 : 0));
}
