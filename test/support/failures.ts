import type { Knex } from 'knex';
import { withTransaction } from '../../src/db/transaction';
import { fundWallet, walletOf } from '../../src/modules/ledger';

/** What the services throw (DomainError and its kinds), as a test reads it. */
export type Failure = Error & { code?: string; category?: string; details?: unknown; headers?: Record<string, string> };

/** The error `promise` rejects with; the test fails when it resolves instead. */
export async function failure(promise: Promise<unknown>): Promise<Failure> {
  try {
    await promise;
  } catch (error) {
    return error as Failure;
  }
  throw new Error('expected a failure');
}

/** A wallet of a new owner (a random id: the ledger does not need a user row), funded through the ledger. */
export async function fundedWallet(knex: Knex, currency: string, amountMinor: bigint) {
  const userId = crypto.randomUUID();
  const wallet = await withTransaction(knex, async (trx) => {
    await fundWallet(trx, userId, currency, amountMinor);
    return walletOf(trx, userId, currency);
  });
  return { userId, wallet };
}
