import { describe, expect, it } from 'vitest';
import { walletIdentity } from '../../src/modules/ledger';
import { completesCycle, contributionPosting, drawBeneficiary, payoutOf, payoutPosting, postingPlan, potOf, type TontineInLedger } from '../../src/modules/tontines';
import type { ContributionStatus } from '../../src/modules/tontines/tontine-rows';
import { accountsOf } from '../../src/modules/writes';

const ID = '00000000-0000-4000-8000-0000000000d1';
const POOL = '00000000-0000-4000-8000-0000000000a1';
const [A, B, C] = ['00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-00000000000b', '00000000-0000-4000-8000-00000000000c'];
const SEED = 'ab'.repeat(32);

/** A tontine of A, B and C in cycle `cycle`, paying 1000 XOF each; `statuses` of the open cycle's contributions by member. */
function tontine(options: { cycle?: number; beneficiaries?: Array<string | null>; statuses?: Partial<Record<string, ContributionStatus>> } = {}): TontineInLedger {
  const cycle = options.cycle ?? 1;
  const beneficiaries = options.beneficiaries ?? [A, B, C];
  return {
    tontine: { id: ID, currency: 'XOF', contributionMinor: 1000n, poolAccountId: POOL, currentCycle: cycle, drawSeed: SEED },
    members: [{ userId: A }, { userId: B }, { userId: C }],
    cycles: beneficiaries.map((beneficiaryUserId, index) => ({ number: index + 1, beneficiaryUserId })),
    currentContributions: [A, B, C].map((userId) => ({ id: `k-${cycle}-${userId.slice(-1)}`, userId, status: options.statuses?.[userId] ?? 'pending' })),
  };
}

const contributionOf = (userId: string, cycle = 1) => ({
  kind: 'tontine.contribution',
  reference: `k-${cycle}-${userId.slice(-1)}`,
  metadata: { tontine_id: ID, cycle, user_id: userId },
  entries: [
    { account: walletIdentity(userId, 'XOF'), amountMinor: -1000n },
    { account: { id: POOL }, amountMinor: 1000n },
  ],
});

const payoutTo = (userId: string, cycle = 1) => ({
  kind: 'tontine.payout',
  reference: `${ID}:${cycle}`,
  metadata: { tontine_id: ID, cycle, user_id: userId },
  allowFrozen: true,
  entries: [
    { account: { id: POOL }, amountMinor: -3000n },
    { account: walletIdentity(userId, 'XOF'), amountMinor: 3000n },
  ],
});

describe("a tontine's posting plan (the one list of the accounts a contribution touches)", () => {
  it("moves one contribution from the member's wallet (by identity) into the pool (by id), referenced by the contribution", () => {
    const locked = tontine({ cycle: 2, beneficiaries: [A, B, C] });
    expect(contributionPosting(locked, { id: 'k-2-b', userId: B })).toEqual(contributionOf(B, 2));
  });

  it('pays the whole pot, one contribution per cycle, out of the pool to the beneficiary, once per cycle, even to a frozen wallet', () => {
    const locked = tontine({ cycle: 3 });
    expect(potOf(locked)).toBe(3000n);
    expect(potOf({ ...locked, cycles: locked.cycles.slice(0, 2) })).toBe(2000n);
    expect(payoutPosting(locked, C)).toEqual(payoutTo(C, 3));
  });

  it('names the beneficiary the start fixed (join order), drawing nobody', () => {
    expect(payoutOf(tontine({ cycle: 1 }))).toEqual({ beneficiaryUserId: A });
    expect(payoutOf(tontine({ cycle: 2 }))).toEqual({ beneficiaryUserId: B });
  });

  it("draws a random tontine's beneficiary among the members who have not received a pot yet", () => {
    expect(payoutOf(tontine({ cycle: 1, beneficiaries: [null, null, null] }))).toEqual({ beneficiaryUserId: drawBeneficiary(SEED, 1, [A, B, C]), drawnAmong: [A, B, C] });
    const drawn = payoutOf(tontine({ cycle: 2, beneficiaries: [B, null, null] }));
    expect(drawn).toEqual({ beneficiaryUserId: drawBeneficiary(SEED, 2, [A, C]), drawnAmong: [A, C] });
    expect(payoutOf(tontine({ cycle: 3, beneficiaries: [C, A, null] }))).toEqual({ beneficiaryUserId: B, drawnAmong: [B] });
  });

  it('refuses to pay out a cycle the tontine does not have', () => {
    expect(() => payoutOf(tontine({ cycle: 4 }))).toThrow(`tontine ${ID} has no cycle 4`);
    expect(() => payoutOf(tontine({ cycle: 0 }))).toThrow('has no cycle 0');
  });

  it("completes the cycle with the last unpaid contribution only: a pending or late one, the others paid (or refunded)", () => {
    expect(completesCycle(tontine({ statuses: { [B]: 'paid', [C]: 'paid' } }), A)).toBe(true);
    expect(completesCycle(tontine({ statuses: { [A]: 'late', [B]: 'paid', [C]: 'paid' } }), A)).toBe(true);
    expect(completesCycle(tontine({ statuses: { [B]: 'paid', [C]: 'refunded' } }), A)).toBe(true);
    expect(completesCycle(tontine({ statuses: { [B]: 'paid' } }), A)).toBe(false);
    expect(completesCycle(tontine({ statuses: { [B]: 'paid', [C]: 'late' } }), A)).toBe(false);
    // Already paid, or no contribution in the open cycle: it completes nothing.
    expect(completesCycle(tontine({ statuses: { [A]: 'paid', [B]: 'paid', [C]: 'paid' } }), A)).toBe(false);
    expect(completesCycle(tontine({ statuses: { [B]: 'paid', [C]: 'paid' } }), '00000000-0000-4000-8000-0000000000ff')).toBe(false);
  });

  it('counts the contributions a group may pay before this one as paid', () => {
    const locked = tontine({ statuses: { [B]: 'paid' } });
    expect(completesCycle(locked, A, [C])).toBe(true);
    expect(completesCycle(locked, A, [B])).toBe(false);
    expect(completesCycle(tontine(), A, [B, C])).toBe(true);
    expect(completesCycle(tontine(), A, [B])).toBe(false);
  });

  it("is the contribution alone while others are unpaid, and the contribution then the payout from the cycle's last", () => {
    expect(postingPlan(tontine({ statuses: { [B]: 'paid' } }), A)).toEqual([contributionOf(A)]);
    expect(postingPlan(tontine({ statuses: { [B]: 'paid', [C]: 'paid' } }), A)).toEqual([contributionOf(A), payoutTo(A)]);
    expect(postingPlan(tontine({ cycle: 2, statuses: { [A]: 'paid', [B]: 'paid', [C]: 'late' } }), C)).toEqual([contributionOf(C, 2), payoutTo(B, 2)]);
    const drawn = tontine({ beneficiaries: [null, null, null], statuses: { [A]: 'paid', [C]: 'paid' } });
    expect(postingPlan(drawn, B)).toEqual([contributionOf(B), payoutTo(drawBeneficiary(SEED, 1, [A, B, C]))]);
  });

  it('posts nothing for a contribution already paid or a member without one in the open cycle', () => {
    expect(postingPlan(tontine({ statuses: { [A]: 'paid' } }), A)).toEqual([]);
    expect(postingPlan(tontine({ statuses: { [A]: 'refunded' } }), A)).toEqual([]);
    expect(postingPlan(tontine(), '00000000-0000-4000-8000-0000000000ff')).toEqual([]);
  });

  it('ahead of a group, locks the payout too when the others of the group may pay first: the wallets by identity, the pool by id', () => {
    const locked = tontine({ statuses: { [B]: 'paid' } });
    expect(postingPlan(locked, A, [C])).toEqual([contributionOf(A), payoutTo(A)]);
    expect(accountsOf(postingPlan(locked, C, [A]))).toEqual({ identities: [walletIdentity(C, 'XOF'), walletIdentity(A, 'XOF')], accountIds: [POOL, POOL] });
    expect(accountsOf(postingPlan(locked, C))).toEqual({ identities: [walletIdentity(C, 'XOF')], accountIds: [POOL] });
  });
});
