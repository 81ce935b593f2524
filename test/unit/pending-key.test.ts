import type { Knex } from 'knex';
import { describe, expect, it, vi } from 'vitest';
import { NO_KEY_ARGUMENTS, PendingKey, pendingKeyOf, withPendingKey, type ClaimAttempt, type ClaimedKey } from '../../src/modules/idempotency/pending-key';

/**
 * The key a request hands to the one write path: write_claim's arguments name its owner (a user
 * or an organisation, never both), a first try that claimed nothing is settled by the pipeline's
 * rules, and the key is reachable from its transaction only while the operation runs.
 */
const USER = '00000000-0000-4000-8000-0000000000a1';
const ORGANIZATION = '00000000-0000-4000-8000-0000000000b2';
const TOKEN = '00000000-0000-4000-8000-0000000000c3';
const trx = {} as Knex.Transaction;

function pendingKey(settleWith: (trx: Knex.Transaction, first: ClaimAttempt) => Promise<ClaimedKey>, organizationId?: string): PendingKey {
  const scope = { userId: USER, operation: 'fundEscrow', key: 'key-1', ...(organizationId ? { organizationId } : {}) };
  return new PendingKey(scope, 'hash-1', TOKEN, { leaseSeconds: 30, ttlHours: 24 }, 200, settleWith);
}

describe('a pending key', () => {
  it("claims for the user when the scope has no organisation, for the organisation alone otherwise (write_claim's eight arguments)", () => {
    const never = () => Promise.reject(new Error('not settled'));
    expect(pendingKey(never).claimArguments()).toEqual([USER, null, 'fundEscrow', 'key-1', 'hash-1', TOKEN, 30, 24]);
    expect(pendingKey(never, ORGANIZATION).claimArguments()).toEqual([null, ORGANIZATION, 'fundEscrow', 'key-1', 'hash-1', TOKEN, 30, 24]);
    // Without a key, the same eight arguments, all null: write_claim claims nothing.
    expect(NO_KEY_ARGUMENTS).toEqual([null, null, null, null, null, null, null, null]);
  });

  it('keeps the key its read claimed without asking the pipeline', async () => {
    const settleWith = vi.fn(() => Promise.reject(new Error('not settled')));
    const key = pendingKey(settleWith);
    const claimed = { id: 'row-1', claimToken: TOKEN };
    await key.settle(trx, { held: true, claimed });
    expect(key.claimed).toEqual(claimed);
    expect(settleWith).not.toHaveBeenCalled();
  });

  it("settles a first try that claimed nothing by the pipeline's rules: the key they claim, or their answer thrown", async () => {
    const taken = { id: 'row-2', claimToken: 'token-2' };
    const settleWith = vi.fn((_trx: Knex.Transaction, _first: ClaimAttempt) => Promise.resolve(taken));
    const key = pendingKey(settleWith);
    await key.settle(trx, { held: true });
    expect(key.claimed).toEqual(taken);
    expect(settleWith).toHaveBeenCalledWith(trx, { held: true });

    const refused = pendingKey(() => Promise.reject(new Error('ConcurrentOperation')));
    await expect(refused.settle(trx, { held: false })).rejects.toThrow('ConcurrentOperation');
    expect(refused.claimed).toBeUndefined();
  });

  it('is handed over with its transaction only while the work runs, even when the work throws', async () => {
    const key = pendingKey(() => Promise.reject(new Error('not settled')));
    expect(pendingKeyOf(trx)).toBeUndefined();
    expect(await withPendingKey(trx, key, () => Promise.resolve(pendingKeyOf(trx)))).toBe(key);
    expect(pendingKeyOf(trx)).toBeUndefined();
    await expect(
      withPendingKey(trx, key, async () => {
        await Promise.resolve();
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(pendingKeyOf(trx)).toBeUndefined();
    // Another transaction does not see it.
    await withPendingKey(trx, key, () => Promise.resolve(expect(pendingKeyOf({} as Knex.Transaction)).toBeUndefined()));
  });
});
