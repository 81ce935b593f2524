import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  ESCROW_ACTIONS,
  HELD_STATUSES,
  allowedActions,
  authorize,
  feeFor,
  fundingAmount,
  isDueForRelease,
  refundSettlement,
  releaseSettlement,
  splitSettlement,
  type EscrowCapacity,
  type EscrowStatus,
} from '../../src/modules/escrows';
import { capacitiesOf, nextStatus, statusAfter, statusAfterRelease } from '../../src/modules/escrows/escrow-lifecycle';

const NOW = new Date('2026-11-23T12:00:00Z');
const LATER = new Date('2026-11-26T12:00:00Z');
const as = (...capacities: EscrowCapacity[]) => new Set(capacities);

describe('escrow fee', () => {
  it.each([
    // amount, bps, payer, total, buyer share, seller share
    [1250n, 100, 'buyer', 13n, 13n, 0n], // 12.5 rounds up
    [1249n, 100, 'buyer', 13n, 13n, 0n], // 12.49 rounds up too
    [1250n, 100, 'seller', 13n, 0n, 13n],
    [1250n, 100, 'split', 13n, 7n, 6n], // the odd unit on the buyer
    [125050n, 100, 'split', 1251n, 626n, 625n],
    [1200n, 100, 'split', 12n, 6n, 6n],
    [49n, 100, 'buyer', 1n, 1n, 0n], // 0.49: a non-zero rate never gives a zero fee
    [1n, 1, 'buyer', 1n, 1n, 0n],
    [50n, 100, 'buyer', 1n, 1n, 0n],
    [100n, 100, 'buyer', 1n, 1n, 0n], // exactly 1: no rounding
    [500000n, 0, 'buyer', 0n, 0n, 0n],
    [7n, 10000, 'split', 7n, 4n, 3n],
  ] as const)('%s at %i bps paid by %s: fee %s (buyer %s, seller %s)', (amount, bps, payer, total, buyer, seller) => {
    expect(feeFor(amount, bps, payer)).toEqual({ bps, payer, minimumMinor: 0n, totalMinor: total, buyerShareMinor: buyer, sellerShareMinor: seller });
  });

  it.each([
    // amount, bps, minimum, total
    [1000n, 100, 25n, 25n], // 10 by the rate, 25 at least
    [5000n, 100, 25n, 50n], // the rate is above the minimum
    [10n, 100, 25n, 10n], // never more than the amount
    [1000n, 0, 25n, 0n], // a zero rate is no fee at all
  ] as const)('%s at %i bps with a minimum of %s: fee %s', (amount, bps, minimum, total) => {
    expect(feeFor(amount, bps, 'seller', minimum)).toEqual({ bps, payer: 'seller', minimumMinor: minimum, totalMinor: total, buyerShareMinor: 0n, sellerShareMinor: total });
  });

  it('twenty 49-XOF escrows pay at least the fee of one 980-XOF escrow', () => {
    expect(20n * feeFor(49n, 100, 'buyer').totalMinor).toBeGreaterThanOrEqual(feeFor(980n, 100, 'buyer').totalMinor);
    // A split charges the fee on the seller's part under the same minimum.
    const fee = feeFor(1000n, 100, 'buyer', 25n);
    expect(splitSettlement(1000n, fee, 400n)).toEqual({ heldMinor: 1025n, toSellerMinor: 400n, toBuyerMinor: 600n, feeMinor: 25n });
  });

  it('charges nothing on a zero amount', () => {
    expect(feeFor(0n, 100, 'split')).toEqual({ bps: 100, payer: 'split', minimumMinor: 0n, totalMinor: 0n, buyerShareMinor: 0n, sellerShareMinor: 0n });
  });

  it('says why it refuses a rate, an amount or a split', () => {
    expect(() => feeFor(-1n, 100, 'buyer')).toThrow(new RangeError('an escrow amount is never negative'));
    expect(() => feeFor(100n, 10_001, 'buyer')).toThrow(new RangeError('bad fee rate 10001 bps'));
    expect(() => feeFor(100n, -1, 'seller')).toThrow(new RangeError('bad fee rate -1 bps'));
    expect(() => feeFor(100n, 100, 'buyer', -1n)).toThrow(new RangeError('a minimum fee is never negative'));
    const fee = feeFor(500_000n, 100, 'buyer');
    for (const sellerAmount of [0n, -1n, 500_000n, 500_001n]) {
      expect(() => splitSettlement(500_000n, fee, sellerAmount), String(sellerAmount)).toThrow(
        new RangeError('a split gives the seller part of the amount, not none or all of it'),
      );
    }
  });

  it('refuses rates outside 0..10000 bps and negative amounts', () => {
    expect(() => feeFor(100n, 10_001, 'buyer')).toThrow(RangeError);
    expect(() => feeFor(100n, -1, 'buyer')).toThrow(RangeError);
    expect(() => feeFor(100n, 1.5, 'buyer')).toThrow(RangeError);
    expect(() => feeFor(-1n, 100, 'buyer')).toThrow(RangeError);
  });

  it('settlements of the documented examples', () => {
    const fee = feeFor(500_000n, 100, 'buyer');
    expect(fundingAmount(500_000n, fee)).toBe(505_000n);
    expect(releaseSettlement(500_000n, fee)).toEqual({ heldMinor: 505_000n, toSellerMinor: 500_000n, toBuyerMinor: 0n, feeMinor: 5_000n });
    expect(refundSettlement(500_000n, fee)).toEqual({ heldMinor: 505_000n, toSellerMinor: 0n, toBuyerMinor: 505_000n, feeMinor: 0n });
    expect(splitSettlement(500_000n, fee, 300_000n)).toEqual({ heldMinor: 505_000n, toSellerMinor: 300_000n, toBuyerMinor: 202_000n, feeMinor: 3_000n });
    const sellerPays = feeFor(500_000n, 100, 'seller');
    expect(splitSettlement(500_000n, sellerPays, 300_000n)).toEqual({ heldMinor: 500_000n, toSellerMinor: 297_000n, toBuyerMinor: 200_000n, feeMinor: 3_000n });
    expect(() => splitSettlement(500_000n, fee, 500_000n)).toThrow(RangeError);
    expect(() => splitSettlement(500_000n, fee, 0n)).toThrow(RangeError);
  });

  it('every settlement pays out exactly what was held, never a negative part, and the fee at most once', () => {
    const payers = fc.constantFrom('buyer' as const, 'seller' as const, 'split' as const);
    fc.assert(fc.property(fc.bigInt({ min: 1n, max: 10n ** 15n }), fc.integer({ min: 0, max: 10_000 }), payers, fc.bigInt({ min: 0n, max: 1_000n }), (amount, bps, payer, minimum) => {
      const byRate = feeFor(amount, bps, payer);
      // Up: 0 <= fee - amount * bps / 10000 < 1, in exact integer arithmetic (times 10000).
      const error = byRate.totalMinor * 10_000n - amount * BigInt(bps);
      expect(error >= 0n && error < 10_000n).toBe(true);
      if (bps > 0) expect(byRate.totalMinor).toBeGreaterThan(0n);
      const fee = feeFor(amount, bps, payer, minimum);
      const floor = bps > 0 && minimum > byRate.totalMinor ? minimum : byRate.totalMinor;
      expect(fee.totalMinor).toBe(floor < amount ? floor : amount);
      expect(fee.buyerShareMinor + fee.sellerShareMinor).toBe(fee.totalMinor);
      if (payer === 'buyer') expect(fee.sellerShareMinor).toBe(0n);
      if (payer === 'seller') expect(fee.buyerShareMinor).toBe(0n);
      if (payer === 'split') expect([0n, 1n]).toContain(fee.buyerShareMinor - fee.sellerShareMinor);
      const plans = [releaseSettlement(amount, fee), refundSettlement(amount, fee)];
      if (amount > 1n) plans.push(splitSettlement(amount, fee, amount / 2n));
      for (const plan of plans) {
        expect(plan.heldMinor).toBe(amount + fee.buyerShareMinor);
        expect(plan.toSellerMinor + plan.toBuyerMinor + plan.feeMinor).toBe(plan.heldMinor);
        for (const part of [plan.toSellerMinor, plan.toBuyerMinor, plan.feeMinor]) expect(part).toBeGreaterThanOrEqual(0n);
        expect(plan.feeMinor).toBeLessThanOrEqual(fee.totalMinor);
      }
    }));
  });
});

describe('escrow lifecycle', () => {
  const state = (status: EscrowStatus, inspectionEndsAt: Date | null = null) => ({ status, inspectionEndsAt });

  it('allowed actions per status and capacity', () => {
    const cases: Array<[EscrowStatus, EscrowCapacity[], string[]]> = [
      ['awaiting_funding', ['buyer'], ['fund', 'cancel']],
      ['awaiting_funding', ['seller'], ['cancel']],
      ['awaiting_funding', ['administrator'], []],
      ['funded', ['buyer'], ['accept', 'dispute']],
      ['funded', ['seller'], ['deliver', 'refund']],
      ['delivered', ['buyer'], ['accept', 'dispute']],
      ['delivered', ['seller'], ['refund']],
      ['disputed', ['buyer'], []],
      ['disputed', ['seller'], ['refund']],
      ['disputed', ['administrator'], ['resolve']],
      // A party never rules on its own escrow, administrator or not.
      ['disputed', ['buyer', 'administrator'], []],
      ['disputed', ['seller', 'administrator'], ['refund']],
      ['released', ['buyer'], []],
      ['refunded', ['seller'], []],
      ['canceled', ['buyer'], []],
    ];
    for (const [status, capacities, expected] of cases) {
      expect({ status, capacities, actions: allowedActions(state(status, LATER), as(...capacities), NOW) }).toEqual({ status, capacities, actions: expected });
    }
  });

  it('each action leads to its status; a resolution to released or refunded', () => {
    expect(nextStatus('fund')).toBe('funded');
    expect(nextStatus('deliver')).toBe('delivered');
    expect(nextStatus('accept')).toBe('released');
    expect(nextStatus('dispute')).toBe('disputed');
    expect(nextStatus('refund')).toBe('refunded');
    expect(nextStatus('cancel')).toBe('canceled');
    expect(nextStatus('resolve', 'refund')).toBe('refunded');
    expect(nextStatus('resolve', 'release')).toBe('released');
    expect(nextStatus('resolve', 'split')).toBe('released');
  });

  it('holds the buyer\'s money while funded, delivered, accepted (a release held for verification) or disputed', () => {
    expect(HELD_STATUSES).toEqual(['funded', 'delivered', 'accepted', 'disputed']);
  });

  it('a dispute is possible only before the inspection period ends; then the release is due', () => {
    expect(allowedActions(state('delivered', LATER), as('buyer'), new Date(LATER.getTime() - 1))).toEqual(['accept', 'dispute']);
    expect(allowedActions(state('delivered', LATER), as('buyer'), LATER)).toEqual(['accept']);
    expect(isDueForRelease(state('delivered', LATER), new Date(LATER.getTime() - 1))).toBe(false);
    expect(isDueForRelease(state('delivered', LATER), LATER)).toBe(true);
    expect(isDueForRelease(state('disputed', LATER), LATER)).toBe(false);
    expect(isDueForRelease(state('funded'), LATER)).toBe(false);
  });

  it('a role that may never act is 403, a wrong state 409 with the allowed actions', () => {
    expect(() => authorize('fund', state('awaiting_funding'), as('seller'), NOW)).toThrow(expect.objectContaining({ code: 'InsufficientRole', category: 'forbidden' }));
    expect(() => authorize('resolve', state('disputed'), as('buyer'), NOW)).toThrow(expect.objectContaining({ code: 'InsufficientRole' }));
    expect(() => authorize('accept', state('released'), as('buyer'), NOW)).toThrow(
      expect.objectContaining({ code: 'InvalidEscrowState', category: 'conflict', details: { status: 'released', action: 'accept', allowed_actions: [] } }),
    );
    expect(() => authorize('cancel', state('funded'), as('seller'), NOW)).toThrow(
      expect.objectContaining({ details: { status: 'funded', action: 'cancel', allowed_actions: ['deliver', 'refund'] } }),
    );
    for (const action of ESCROW_ACTIONS) expect(() => authorize(action, state('canceled'), as('buyer', 'seller', 'administrator'), NOW)).toThrow();
    expect(() => authorize('fund', state('awaiting_funding'), as('buyer'), NOW)).not.toThrow();
  });

  it('an administrator who is a party cannot resolve: 403 ConflictOfInterest, in any status', () => {
    for (const party of ['buyer', 'seller'] as const) {
      for (const status of ['disputed', 'funded'] as const) {
        expect(() => authorize('resolve', state(status), as(party, 'administrator'), NOW)).toThrow(
          expect.objectContaining({
            code: 'ConflictOfInterest',
            category: 'forbidden',
            message: 'You are a party to this escrow: you cannot resolve it. Another platform administrator must.',
          }),
        );
      }
    }
    expect(() => authorize('resolve', state('disputed'), as('administrator'), NOW)).not.toThrow();
    expect(() => authorize('refund', state('disputed'), as('seller', 'administrator'), NOW)).not.toThrow();
  });

  it('every status an action writes comes from the lifecycle, checked on the row it writes', () => {
    expect(statusAfter('fund', state('awaiting_funding'), as('buyer'), NOW)).toBe('funded');
    expect(statusAfter('dispute', state('delivered', LATER), as('buyer'), NOW)).toBe('disputed');
    // A settling action's status is decided by what its settlement pays.
    expect(statusAfter('accept', state('delivered'), as('buyer'), NOW, { toSellerMinor: 1n, feeMinor: 0n })).toBe('released');
    expect(statusAfter('accept', state('delivered'), as('buyer'), NOW, { toSellerMinor: 0n, feeMinor: 0n })).toBe('refunded');
    expect(statusAfter('resolve', state('disputed'), as('administrator'), NOW, { toSellerMinor: 0n, feeMinor: 1n })).toBe('released');
    expect(() => statusAfter('accept', state('delivered'), as('buyer'), NOW)).toThrow(/outcome/);
    expect(() => statusAfter('fund', state('funded'), as('buyer'), NOW)).toThrow(expect.objectContaining({ code: 'InvalidEscrowState' }));
    expect(() => statusAfter('deliver', state('funded'), as('buyer'), NOW)).toThrow(expect.objectContaining({ code: 'InsufficientRole' }));
  });

  it('the automatic release writes its status only when the release is due', () => {
    const paid = { toSellerMinor: 980n, feeMinor: 20n };
    expect(statusAfterRelease(state('delivered', LATER), LATER, paid)).toBe('released');
    expect(() => statusAfterRelease(state('delivered', LATER), NOW, paid)).toThrow(expect.objectContaining({ code: 'InvalidEscrowState' }));
    expect(() => statusAfterRelease(state('disputed', LATER), LATER, paid)).toThrow(expect.objectContaining({ code: 'InvalidEscrowState' }));
    // The platform's release is never among a caller's allowed actions.
    expect(allowedActions(state('delivered', NOW), as('buyer', 'seller', 'administrator'), LATER)).toEqual(['accept', 'refund']);
  });
});

describe('capacitiesOf: what a caller is to one escrow', () => {
  const escrow = { buyerUserId: 'buyer-id', sellerUserId: 'seller-id' };
  it('names the buyer, the seller and an administrator, and nothing for anyone else', () => {
    expect([...capacitiesOf(escrow, { userId: 'buyer-id', isAdmin: false })]).toEqual(['buyer']);
    expect([...capacitiesOf(escrow, { userId: 'seller-id', isAdmin: false })]).toEqual(['seller']);
    expect([...capacitiesOf(escrow, { userId: 'someone', isAdmin: true })]).toEqual(['administrator']);
    expect([...capacitiesOf(escrow, { userId: 'someone', isAdmin: false })]).toEqual([]);
  });

  it('gives an administrator who is a party both capacities (so a conflict of interest is seen)', () => {
    expect([...capacitiesOf(escrow, { userId: 'seller-id', isAdmin: true })]).toEqual(['seller', 'administrator']);
    expect([...capacitiesOf({ buyerUserId: 'same', sellerUserId: 'same' }, { userId: 'same', isAdmin: false })]).toEqual(['buyer', 'seller']);
  });
});
