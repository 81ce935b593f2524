import type { Knex } from 'knex';
import { describe, expect, it } from 'vitest';
import { beforeCommitScope, onBeforeCommit, withTransaction } from '../../src/db/transaction';
import { ConflictError } from '../../src/errors';
import { testKnex } from '../support/database';

/**
 * withTransaction, the one transaction of every request that is not applied in a window (escrow
 * refunds and rulings, payment settlements among them): retried on a deadlock or a serialization
 * failure, on a lost connection only when asked, never on a refusal; its before-commit hooks run
 * once its work is done, inside it, and a transaction whose work throws runs none.
 */
const knex = testKnex();
const pgError = (code: string, message: string) => Object.assign(new Error(`${message} (simulated)`), { code });

describe('withTransaction', () => {
  it('runs the work again after a deadlock or a serialization failure, each attempt a transaction of its own, then answers its result', async () => {
    const transactions = new Set<Knex.Transaction>();
    let runs = 0;
    const value = await withTransaction(knex, async (trx) => {
      runs += 1;
      transactions.add(trx);
      if (runs === 1) throw pgError('40P01', 'deadlock detected');
      if (runs === 2) throw pgError('40001', 'could not serialize access');
      return 'made';
    });
    expect({ value, runs, transactions: transactions.size }).toEqual({ value: 'made', runs: 3, transactions: 3 });
  });

  it('gives up after its retries, and never runs a refusal again', async () => {
    let deadlocks = 0;
    await expect(
      withTransaction(knex, async () => {
        deadlocks += 1;
        throw pgError('40P01', 'deadlock detected');
      }),
    ).rejects.toMatchObject({ code: '40P01' });
    expect(deadlocks).toBe(4);
    let refusals = 0;
    await expect(
      withTransaction(knex, async () => {
        refusals += 1;
        throw new ConflictError('Refused', 'refused on purpose');
      }),
    ).rejects.toMatchObject({ code: 'Refused' });
    expect(refusals).toBe(1);
  });

  it('runs the work again on a new connection after a lost one only when asked', async () => {
    const lostOnce = () => {
      let runs = 0;
      return {
        runs: () => runs,
        work: async () => {
          runs += 1;
          if (runs === 1) throw pgError('57P01', 'terminating connection due to administrator command');
          return 'made';
        },
      };
    };
    const asked = lostOnce();
    expect(await withTransaction(knex, asked.work, { retryOnConnectionLoss: true })).toBe('made');
    expect(asked.runs()).toBe(2);
    const notAsked = lostOnce();
    await expect(withTransaction(knex, notAsked.work)).rejects.toMatchObject({ code: '57P01' });
    expect(notAsked.runs()).toBe(1);
  });

  it('runs the before-commit hooks once the work is done, inside its transaction and in order (a hook may add one); none when the work throws', async () => {
    const ran: string[] = [];
    await withTransaction(knex, async (trx) => {
      expect(onBeforeCommit(trx, async (inside) => void ran.push(inside === trx ? 'first' : 'another transaction'))).toBe(true);
      onBeforeCommit(trx, async () => {
        ran.push('second');
        onBeforeCommit(trx, async () => void ran.push('added by the second'));
      });
      ran.push('work');
    });
    expect(ran).toEqual(['work', 'first', 'second', 'added by the second']);
    const refused: string[] = [];
    await expect(
      withTransaction(knex, async (trx) => {
        onBeforeCommit(trx, async () => void refused.push('hook'));
        throw new ConflictError('Refused', 'refused on purpose');
      }),
    ).rejects.toMatchObject({ code: 'Refused' });
    expect(refused).toEqual([]);
  });

  it('gives each transaction its own hook scope, and none to a transaction it did not open', async () => {
    const scopes: Array<object | undefined> = [];
    for (let n = 0; n < 2; n += 1) await withTransaction(knex, async (trx) => void scopes.push(beforeCommitScope(trx)));
    expect(scopes.every((scope) => scope !== undefined)).toBe(true);
    expect(scopes[0]).not.toBe(scopes[1]);
    await knex.transaction(async (trx) => {
      expect(beforeCommitScope(trx)).toBeUndefined();
      expect(onBeforeCommit(trx, async () => undefined)).toBe(false);
    });
  });
});
