import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { describe, expect, it } from 'vitest';
import { beforeCommitScope, onBeforeCommit, withTransaction } from '../../src/db/transaction';
import { ConflictError } from '../../src/errors';
import { PostingBatcher, post, walletIdentity, walletOf, type LedgerAccount } from '../../src/modules/ledger';
import { databaseKind, testKnex } from '../support/database';
import { fundedWallet as fundedWalletOn } from '../support/failures';
import { balanceOf, expectLedgerInvariants } from '../support/ledger-invariants';
import { deferred, until } from '../support/jobs';

/**
 * The group commit of postings made in TypeScript: items share one
 * transaction, each under its own savepoint, each with its own outcome, answered after the
 * commit; objects and accounts are locked first, in one order; a batch that fails as a whole
 * runs its items again alone.
 */

const knex = testKnex();
const realServer = databaseKind() === 'postgres';
const fundedWallet = (amountMinor: bigint) => fundedWalletOn(knex, 'XOF', amountMinor);
const emptyWallet = async () => {
  const userId = crypto.randomUUID();
  return { userId, wallet: await withTransaction(knex, (trx) => walletOf(trx, userId, 'XOF')) };
};
/** Lets pending promise callbacks and I/O callbacks run. */
const turn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Holds the batcher's flight open until `release()`: items submitted meanwhile wait for the
 * window instead of leaving at once, and leave together.
 */
function holdFlight(batcher: PostingBatcher): () => void {
  const held = deferred();
  void batcher.run(() => held.promise);
  return () => held.resolve();
}

/** A batcher whose `wallet` objects are users: the locker answers their XOF wallets (nothing else to lock). */
function walletBatcher(lockedKinds: string[] = [], batches: Array<[number, boolean]> = []): PostingBatcher {
  const batcher = new PostingBatcher(knex, { onBatch: (size, failed) => void batches.push([size, failed]) });
  // Items of oneBatch name this one object as well: they contend, so they share a transaction.
  batcher.registerLocker('together', async () => ({}));
  batcher.registerLocker('wallet', async (_trx, objects) => {
    lockedKinds.push(objects.map((object) => object.id).join(','));
    return { identities: objects.map((object) => walletIdentity(object.id, 'XOF')) };
  });
  return batcher;
}

/**
 * Runs `works` as ONE batch: a first item holds the batcher's flight open, so the ones submitted
 * right after it gather in its window and leave together; they all name one object, so they
 * contend and share a transaction.
 */
function oneBatch(batcher: PostingBatcher, works: Array<{ work: (trx: Knex.Transaction) => Promise<unknown>; userId?: string }>): Array<Promise<unknown>> {
  const release = holdFlight(batcher);
  // Submitting queues an item at once (no await before it): every item is in the window now.
  const runs = works.map(({ work, userId }) => batcher.run(work, [{ kind: 'together', id: 'batch' }, ...(userId ? [{ kind: 'wallet', id: userId }] : [])]));
  release();
  return runs;
}

function pay(from: LedgerAccount, to: LedgerAccount, amountMinor: bigint) {
  return async (trx: Knex.Transaction) =>
    (await post(trx, { kind: 'test.batch', reference: crypto.randomUUID(), entries: [{ accountId: from.id, amountMinor: -amountMinor }, { accountId: to.id, amountMinor }] })).id;
}

async function settled<T>(promise: Promise<T>): Promise<{ value?: T; error?: { code?: string; message: string } }> {
  try {
    return { value: await promise };
  } catch (error) {
    return { error: error as { code?: string; message: string } };
  }
}

describe('PostingBatcher (group commit of postings)', () => {
  it('gives each item of a batch its own outcome: a refusal rolls back that item alone, the others commit', async () => {
    const batcher = walletBatcher();
    const a = await fundedWallet(1_000n);
    const b = await fundedWallet(50n);
    const to = await emptyWallet();
    const results = await Promise.all(
      oneBatch(batcher, [
        { work: pay(a.wallet, to.wallet, 300n), userId: a.userId },
        { work: pay(b.wallet, to.wallet, 500n), userId: b.userId }, // more than b has: InsufficientFunds
        { work: pay(a.wallet, to.wallet, 200n), userId: a.userId },
      ]).map(settled),
    );
    expect(batcher.sizes[3]).toBe(1);
    expect(batcher.batchesFailed).toBe(0);
    expect(results[0]?.value).toEqual(expect.any(String));
    expect(results[1]?.error?.code).toBe('InsufficientFunds');
    expect(results[2]?.value).toEqual(expect.any(String));
    expect(await balanceOf(knex, a.wallet.id)).toBe(500n);
    expect(await balanceOf(knex, b.wallet.id)).toBe(50n);
    expect(await balanceOf(knex, to.wallet.id)).toBe(500n);
    await expectLedgerInvariants(knex);
  });

  // Tests that need two connections at once (a look from outside, items side by side) run on a real server: the embedded back-end has one session.
  it.runIf(realServer)('answers no item before the commit: what an earlier item wrote is not visible outside while a later one runs', async () => {
    const batcher = walletBatcher();
    const a = await fundedWallet(1_000n);
    const to = await emptyWallet();
    let seenOutside: bigint | undefined;
    let firstAnswered = false;
    const secondRunning = deferred();
    const looked = deferred();
    const [first, second] = oneBatch(batcher, [
      { work: pay(a.wallet, to.wallet, 100n), userId: a.userId },
      {
        work: async (trx) => {
          seenOutside = await balanceOf(knex, to.wallet.id);
          secondRunning.resolve();
          await looked.promise;
          return pay(a.wallet, to.wallet, 1n)(trx);
        },
        userId: a.userId,
      },
    ]);
    void first?.then(() => (firstAnswered = true));
    // The first item is done and the second is running: an answer given before the commit
    // would have reached the first's caller by now.
    await secondRunning.promise;
    await turn();
    expect(firstAnswered).toBe(false);
    looked.resolve();
    await Promise.all([first, second]);
    expect(seenOutside).toBe(0n);
    expect(await balanceOf(knex, to.wallet.id)).toBe(101n);
  });

  it.runIf(realServer)('locks every item\'s objects and accounts, in order, before the first item runs (two items or more)', async () => {
    const lockedKinds: string[] = [];
    const batcher = walletBatcher(lockedKinds);
    const a = await fundedWallet(1_000n);
    const b = await fundedWallet(1_000n);
    let lockedWhileFirstRan: string | undefined;
    await Promise.all(
      oneBatch(batcher, [
        {
          // While the first item runs, the second item's wallet is already locked by the batch.
          work: async () => {
            lockedWhileFirstRan = (await settled(knex.raw('SELECT id FROM ledger_accounts WHERE id = ? FOR UPDATE NOWAIT', [b.wallet.id]))).error?.code;
          },
          userId: a.userId,
        },
        { work: async () => undefined, userId: b.userId },
        { work: async () => undefined, userId: a.userId },
      ]),
    );
    expect(lockedWhileFirstRan).toBe('55P03'); // lock_not_available
    // One call for the kind, with every object as the items named them (its SQL locks in id order).
    expect(lockedKinds).toEqual([[a.userId, b.userId, a.userId].join(',')]);
  });

  it.runIf(realServer)('creates the accounts a batch will touch before it, on their own, then locks them with the others', async () => {
    const batcher = walletBatcher();
    const newcomer = crypto.randomUUID(); // no wallet yet
    const a = await fundedWallet(1_000n);
    let lockedWhileFirstRan: string | undefined;
    const [, second] = oneBatch(batcher, [
      {
        work: async () => {
          const created = (await knex('ledger_accounts').where({ owner_type: 'user', owner_id: newcomer, kind: 'wallet' }).first('id')) as { id: string } | undefined;
          lockedWhileFirstRan = created ? (await settled(knex.raw('SELECT id FROM ledger_accounts WHERE id = ? FOR UPDATE NOWAIT', [created.id]))).error?.code : 'absent';
        },
        userId: a.userId,
      },
      { work: async (trx) => (await walletOf(trx, newcomer, 'XOF')).id, userId: newcomer },
    ]);
    const walletId = await second;
    // Committed before the batch (seen from another connection) and already locked by it.
    expect(lockedWhileFirstRan).toBe('55P03');
    expect(walletId).toEqual(expect.any(String));
    expect(batcher.batchesFailed).toBe(0);
  });

  it.runIf(realServer)('runs items of one window that contend on nothing side by side, each in its own transaction', async () => {
    const batcher = walletBatcher();
    const a = await fundedWallet(100n);
    const b = await fundedWallet(100n);
    let secondStarted = false;
    let secondHadStartedWhileFirstRan = false;
    const release = holdFlight(batcher);
    const runs = [
      batcher.run(
        async () => {
          // Side by side, the second starts while the first waits; one after the other, it never would.
          await until(() => secondStarted, 5_000).catch(() => undefined);
          secondHadStartedWhileFirstRan = secondStarted;
        },
        [{ kind: 'wallet', id: a.userId }],
      ),
      batcher.run(async () => void (secondStarted = true), [{ kind: 'wallet', id: b.userId }]),
    ];
    release();
    await Promise.all(runs);
    expect(secondHadStartedWhileFirstRan).toBe(true);
    expect(batcher.sizes[2]).toBeUndefined();
    expect(batcher.sizes[1]).toBe(3);
  });

  it('tells each transaction sent, its size and whether it failed as a whole', async () => {
    const batches: Array<[number, boolean]> = [];
    const batcher = walletBatcher([], batches);
    await Promise.all(oneBatch(batcher, [{ work: async () => 1 }, { work: async () => 2 }]));
    await settled(Promise.all(oneBatch(batcher, [{ work: async () => 1 }, { work: async () => Promise.reject(new Error('broken')) }])));
    expect(batches.filter(([size]) => size === 2)).toEqual([
      [2, false],
      [2, true],
    ]);
  });

  it.runIf(realServer)('answers each group as soon as it has committed, not when the slowest group of its window has', async () => {
    const batcher = walletBatcher();
    const a = await fundedWallet(100n);
    const b = await fundedWallet(100n);
    let slowDone = false;
    const fastAnswered = deferred();
    const release = holdFlight(batcher);
    // The slow group finishes only once the fast one has been answered: answering groups when
    // the slowest of the window is done would never answer either.
    const slow = batcher.run(async () => {
      await fastAnswered.promise;
      slowDone = true;
    }, [{ kind: 'wallet', id: a.userId }]);
    const fastRun = batcher.run(async () => slowDone, [{ kind: 'wallet', id: b.userId }]);
    release();
    const fast = await fastRun;
    expect(fast).toBe(false);
    expect(slowDone).toBe(false);
    fastAnswered.resolve();
    await slow;
  });

  it('answers a group that committed even when its onBatch callback throws, and runs nothing twice', async () => {
    let runs = 0;
    const batcher = new PostingBatcher(knex, {
      onBatch: () => {
        throw new Error('metrics are down');
      },
    });
    expect(
      await batcher.run(async () => {
        runs += 1;
        return 'made';
      }),
    ).toBe('made');
    expect({ runs, failed: batcher.batchesFailed }).toEqual({ runs: 1, failed: 0 });
  });

  it('runs a group that meets a deadlock once, then its items alone (never the whole group again)', async () => {
    const batcher = walletBatcher();
    const deadlock = () => Object.assign(new Error('deadlock detected (simulated)'), { code: '40P01' });
    let runs = 0;
    const [, value] = oneBatch(batcher, [
      { work: async () => 'other' },
      {
        work: async () => {
          runs += 1;
          if (runs === 1) throw deadlock();
          return 'made';
        },
      },
    ]);
    expect(await value).toBe('made');
    let aloneRuns = 0;
    expect(
      await batcher.run(async () => {
        aloneRuns += 1;
        if (aloneRuns === 1) throw deadlock();
        return 'alone';
      }),
    ).toBe('alone');
    // The group failed, then its items ran alone; the item alone failed, then ran alone again.
    expect({ runs, aloneRuns, failed: batcher.batchesFailed }).toEqual({ runs: 2, aloneRuns: 2, failed: 2 });
  });

  it('runs an item again on a new connection when its run alone lost its connection', async () => {
    const batcher = walletBatcher();
    let runs = 0;
    const value = await batcher.run(async () => {
      runs += 1;
      if (runs <= 2) throw Object.assign(new Error('terminating connection due to administrator command (simulated)'), { code: '57P01' });
      return 'made';
    });
    // In its group, alone (connection lost: retried), then on a new connection.
    expect({ value, runs }).toEqual({ value: 'made', runs: 3 });
  });

  it('locks kind by kind in the order of their names, and hands each locker every object as named', async () => {
    const batcher = new PostingBatcher(knex);
    const calls: string[] = [];
    for (const kind of ['zeta', 'alpha']) {
      batcher.registerLocker(kind, async (_trx, objects) => {
        calls.push(`${kind}: ${objects.map((object) => `${object.id}/${object.userId ?? '-'}`).join(' ')}`);
        return {};
      });
    }
    batcher.registerLocker('together', async () => ({}));
    const release = holdFlight(batcher);
    const together = { kind: 'together', id: 'batch' };
    const runs = [
      batcher.run(async () => 1, [together, { kind: 'zeta', id: 'z1', userId: 'u1' }]),
      batcher.run(async () => 2, [together, { kind: 'alpha', id: 'a1' }]),
      batcher.run(async () => 3, [together, { kind: 'zeta', id: 'z1', userId: 'u2' }]),
    ];
    release();
    await Promise.all(runs);
    expect(calls).toEqual(['alpha: a1/-', 'zeta: z1/u1 z1/u2']);
  });

  it.runIf(realServer)('locks nothing ahead for an item alone: it takes its locks in its own order', async () => {
    const lockedKinds: string[] = [];
    const batcher = walletBatcher(lockedKinds);
    const a = await fundedWallet(1_000n);
    let lockedWhileRunning: string | undefined;
    await batcher.run(async () => {
      lockedWhileRunning = (await settled(knex.raw('SELECT id FROM ledger_accounts WHERE id = ? FOR UPDATE NOWAIT', [a.wallet.id]))).error?.code;
    }, [{ kind: 'wallet', id: a.userId }]);
    expect(lockedWhileRunning).toBeUndefined();
    expect(lockedKinds).toEqual([]);
  });

  it('runs the items of a batch that failed as a whole again alone: each effect once, each answer its own', async () => {
    const batcher = walletBatcher();
    const a = await fundedWallet(1_000n);
    const to = await emptyWallet();
    let flakyRuns = 0;
    const results = await Promise.all(
      oneBatch(batcher, [
        { work: pay(a.wallet, to.wallet, 100n), userId: a.userId },
        {
          // Not a refusal (a lost connection, a bug): fails the batch the first time, works alone.
          work: async (trx) => {
            flakyRuns += 1;
            const id = await pay(a.wallet, to.wallet, 10n)(trx);
            if (flakyRuns === 1) throw new Error('connection lost (simulated)');
            return id;
          },
          userId: a.userId,
        },
        {
          work: async () => {
            throw new Error('always broken');
          },
        },
        { work: pay(a.wallet, to.wallet, 1n), userId: a.userId },
      ]).map(settled),
    );
    expect(batcher.batchesFailed).toBe(1);
    expect(flakyRuns).toBe(2);
    expect(results.map((result) => result.error?.message)).toEqual([undefined, undefined, 'always broken', undefined]);
    // Rolled back with the failed batch, then made once alone.
    expect(await balanceOf(knex, to.wallet.id)).toBe(111n);
    expect(await knex('postings').whereIn('id', results.flatMap((result) => (typeof result.value === 'string' ? [result.value] : []))).count<{ count: string }[]>('* as n')).toEqual([{ n: '3' }]);
    await expectLedgerInvariants(knex);
  });

  it('runs an item\'s before-commit hooks inside its savepoint: a refused item leaves none behind', async () => {
    const batcher = walletBatcher();
    const ran: string[] = [];
    const results = await Promise.all(
      oneBatch(batcher, [
        {
          work: async (trx) => {
            onBeforeCommit(trx, async () => void ran.push('kept'));
          },
        },
        {
          work: async (trx) => {
            onBeforeCommit(trx, async () => void ran.push('refused'));
            throw new ConflictError('Refused', 'refused on purpose');
          },
        },
      ]).map(settled),
    );
    expect(results[1]?.error?.code).toBe('Refused');
    expect(ran).toEqual(['kept']);
  });

  it('gives each item its own hook scope, and gives the batch its own back after each item', async () => {
    const batcher = walletBatcher();
    const scopes: Array<object | undefined> = [];
    await Promise.all(
      oneBatch(batcher, [
        { work: async (trx) => void scopes.push(beforeCommitScope(trx)) },
        {
          work: async (trx) => {
            scopes.push(beforeCommitScope(trx));
            throw new ConflictError('Refused', 'refused on purpose');
          },
        },
        { work: async (trx) => void scopes.push(beforeCommitScope(trx)) },
      ]).map(settled),
    );
    expect(scopes).toHaveLength(3);
    expect(scopes.every((scope) => scope !== undefined)).toBe(true);
    expect(new Set(scopes).size).toBe(3);
  });

  it('refuses an object of a kind nobody registered, and a second locker for one kind', async () => {
    const batcher = walletBatcher();
    await expect(batcher.run(async () => 1, [{ kind: 'unknown', id: crypto.randomUUID() }])).rejects.toThrow(/no locker for "unknown"/);
    expect(() => batcher.registerLocker('wallet', async () => ({}))).toThrow(/already registered/);
    const a = await fundedWallet(5n);
    expect(await batcher.run(async (trx) => (await walletOf(trx, a.userId, 'XOF')).id, [{ kind: 'wallet', id: a.userId }])).toBe(a.wallet.id);
  });
});
