import { describe, expect, it } from 'vitest';
import { feeFor, releaseSettlement } from '../../src/modules/escrows';
import type { Escrow } from '../../src/modules/escrows/escrow-repository';
import { completedRelease, heldBuyerShare, heldRelease, returnedRelease } from '../../src/modules/escrows/escrow-payouts';
import { settle, settlementParties } from '../../src/modules/escrows/escrow-settlement';
import { refundSettlement, splitSettlement } from '../../src/modules/escrows/escrow-fee';
import { holdPayout, nextAttemptAfter, payoutState, settleHeldPayout, type HeldPayout } from '../../src/modules/held-payouts';
import { shardIdentity, walletIdentity } from '../../src/modules/ledger';

const BUYER = '00000000-0000-4000-8000-00000000000b';
const SELLER = '00000000-0000-4000-8000-00000000000c';
const ADMIN = '00000000-0000-4000-8000-00000000000d';
const ID = '00000000-0000-4000-8000-0000000000e1';
const HELD = '00000000-0000-4000-8000-0000000000f1';
const HOLDING = '00000000-0000-4000-8000-0000000000a1';
const AT = new Date('2026-11-29T09:00:00Z');

function heldRow(): HeldPayout {
  return holdPayout({ id: HELD, subjectType: 'escrow', subjectId: ID, recipientUserId: SELLER, currency: 'XOF', amountMinor: 10_000n, at: AT }).row;
}

describe('a held payout (pure)', () => {
  it('is inserted held_for_verification for recipient_limit, first tried a minute later', () => {
    const { row, change } = holdPayout({ id: HELD, subjectType: 'tontine', subjectId: ID, cycleNumber: 2, recipientUserId: SELLER, currency: 'XOF', amountMinor: 120_000n, at: AT });
    expect(row).toMatchObject({ status: 'held_for_verification', reason: 'recipient_limit', cycleNumber: 2, attempts: 0, settledAt: null, postingId: null });
    expect(change).toEqual({
      table: 'held_payouts',
      op: 'insert',
      id: HELD,
      set: {
        subject_type: 'tontine',
        subject_id: ID,
        cycle_number: 2,
        recipient_user_id: SELLER,
        currency: 'XOF',
        amount_minor: '120000',
        reason: 'recipient_limit',
        status: 'held_for_verification',
        held_at: '2026-11-29T09:00:00.000Z',
        next_attempt_at: '2026-11-29T09:01:00.000Z',
      },
    });
    expect(holdPayout({ id: HELD, subjectType: 'escrow', subjectId: ID, recipientUserId: SELLER, currency: 'XOF', amountMinor: 1n, at: AT }).row.cycleNumber).toBeNull();
  });

  it('is tried again after a minute, doubling each attempt, at most a day apart', () => {
    expect(nextAttemptAfter(0, AT).toISOString()).toBe('2026-11-29T09:01:00.000Z');
    expect(nextAttemptAfter(1, AT).toISOString()).toBe('2026-11-29T09:02:00.000Z');
    expect(nextAttemptAfter(3, AT).toISOString()).toBe('2026-11-29T09:08:00.000Z');
    expect(nextAttemptAfter(10, AT).toISOString()).toBe('2026-11-30T02:04:00.000Z');
    expect(nextAttemptAfter(11, AT).toISOString()).toBe('2026-11-30T09:00:00.000Z');
    expect(nextAttemptAfter(500, AT).toISOString()).toBe('2026-11-30T09:00:00.000Z');
  });

  it('settles once, only while still held: completed, or returned with who and why', () => {
    const later = new Date('2026-11-30T10:00:00Z');
    expect(settleHeldPayout(heldRow(), { status: 'completed' }, later, 0).change).toEqual({
      table: 'held_payouts',
      id: HELD,
      expect: { status: 'held_for_verification' },
      set: { status: 'completed', settled_at: '2026-11-30T10:00:00.000Z' },
      postingIds: { posting_id: 0 },
    });
    const returned = settleHeldPayout(heldRow(), { status: 'returned', byUserId: ADMIN, reason: 'No verification' }, later, 0);
    expect(returned.change.set).toEqual({ status: 'returned', settled_at: '2026-11-30T10:00:00.000Z', returned_by_user_id: ADMIN, return_reason: 'No verification' });
    expect(returned.row).toMatchObject({ status: 'returned', returnedByUserId: ADMIN, returnReason: 'No verification', settledAt: later });
    expect(payoutState(returned.row)).toEqual({ id: HELD, status: 'returned', reason: 'recipient_limit', held_at: '2026-11-29T09:00:00.000Z', settled_at: '2026-11-30T10:00:00.000Z' });
  });
});

function escrow(status: Escrow['status'] = 'delivered'): Escrow {
  const fee = feeFor(10_000n, 100, 'buyer');
  return {
    id: ID,
    buyerUserId: BUYER,
    sellerUserId: SELLER,
    currency: 'XOF',
    amountMinor: 10_000n,
    feeBps: fee.bps,
    feePayer: fee.payer,
    feeMinor: fee.totalMinor,
    feeMinimumMinor: fee.minimumMinor,
    buyerFeeMinor: fee.buyerShareMinor,
    sellerFeeMinor: fee.sellerShareMinor,
    status,
    inspectionEndsAt: null,
    resolutionOutcome: null,
    resolutionSellerAmountMinor: null,
  } as Escrow;
}

describe("an escrow's held release", () => {
  const locked = { escrow: escrow(), holdingAccountId: HOLDING };
  const release = (() => {
    const settled = settle(locked, releaseSettlement(10_000n, { bps: 100, payer: 'buyer', minimumMinor: 0n, totalMinor: 100n, buyerShareMinor: 100n, sellerShareMinor: 0n }), () => 'released', AT);
    return { type: 'escrow.released', payload: { accepted_by: 'buyer', ...settled.amounts }, changes: { acceptedAt: AT, ...settled.changes }, posting: { plan: settled.posting, column: 'settlement_posting_id' as const, parties: settlementParties(locked.escrow) } };
  })();

  it('holds what the seller would receive: accepted, no settlement, its auto-release cleared, escrow.payout_held', () => {
    const held = heldRelease(locked, release, HELD, AT);
    expect(held?.type).toBe('escrow.payout_held');
    expect(held?.payload).toEqual({ accepted_by: 'buyer', held_payout_id: HELD, reason: 'recipient_limit', amount_minor: '10000' });
    // Strictly: a ruling's columns the release did not set are left out, not written as undefined.
    expect(held?.changes).toStrictEqual({ acceptedAt: AT, status: 'accepted', autoReleaseAt: null, payoutId: HELD, payoutStatus: 'held_for_verification', payoutReason: 'recipient_limit', payoutHeldAt: AT, payoutRecipient: 'seller' });
    expect(held?.posting).toBeUndefined();
    expect(held?.rows?.[0]).toMatchObject({ table: 'held_payouts', op: 'insert', id: HELD, set: { recipient_user_id: SELLER, amount_minor: '10000' } });
  });

  it('holds nothing that pays the seller nothing (a refund)', () => {
    const refund = { ...release, changes: { ...release.changes, settledToSellerMinor: 0n } };
    expect(heldRelease(locked, refund, HELD, AT)).toBeUndefined();
    expect(heldRelease(locked, { ...release, posting: undefined }, HELD, AT)).toBeUndefined();
  });

  it('completes with the release it held (released, escrow.released), or is tried again later', () => {
    const accepted = { escrow: { ...escrow('accepted'), payoutId: HELD }, holdingAccountId: HOLDING };
    const { change, retry } = completedRelease(accepted, heldRow(), AT);
    expect(change.type).toBe('escrow.released');
    expect(change.changes).toMatchObject({ status: 'released', settledToSellerMinor: 10_000n, settledFeeMinor: 100n, payoutStatus: 'completed', payoutSettledAt: AT });
    expect(change.posting?.plan.entries).toEqual([
      { account: { id: HOLDING }, amountMinor: -10_100n },
      { account: walletIdentity(SELLER, 'XOF'), amountMinor: 10_000n },
      { account: shardIdentity('fees', 'XOF', ID), amountMinor: 100n },
    ]);
    expect(retry).toEqual({ table: 'held_payouts', id: HELD, expect: { status: 'held_for_verification' }, set: { attempts: 1, next_attempt_at: '2026-11-29T09:02:00.000Z' } });
    expect(change.payload).toEqual({ held_payout_id: HELD, to_seller_minor: '10000', to_buyer_minor: '0', fee_minor: '100' });
    expect(change.rows).toEqual([{ table: 'held_payouts', id: HELD, expect: { status: 'held_for_verification' }, set: { status: 'completed', settled_at: '2026-11-29T09:00:00.000Z' }, postingIds: { posting_id: 0 } }]);
  });

  it('completes a held split with the split the ruling made, not a whole release', () => {
    // 4,000 of 10,000 to the seller: the fee (1 %, the buyer's) on that part only, 40; the
    // buyer gets back the rest of the 10,100 held: 6,060.
    const split = { escrow: { ...escrow('accepted'), payoutId: HELD, resolutionOutcome: 'split', resolutionSellerAmountMinor: 4_000n } as Escrow, holdingAccountId: HOLDING };
    const { change } = completedRelease(split, { ...heldRow(), amountMinor: 4_000n }, AT);
    expect(change.payload).toEqual({ held_payout_id: HELD, to_seller_minor: '4000', to_buyer_minor: '6060', fee_minor: '40' });
    expect(change.posting?.plan.entries).toEqual([
      { account: { id: HOLDING }, amountMinor: -10_100n },
      { account: walletIdentity(SELLER, 'XOF'), amountMinor: 4_000n },
      { account: walletIdentity(BUYER, 'XOF'), amountMinor: 6_060n },
      { account: shardIdentity('fees', 'XOF', ID), amountMinor: 40n },
    ]);
  });

  it('is returned whole to the buyer by an administrator who is not a party (refunded, no fee), never by a party', () => {
    const accepted = { escrow: { ...escrow('accepted'), payoutId: HELD }, holdingAccountId: HOLDING };
    const change = returnedRelease(accepted, heldRow(), { userId: ADMIN, capacities: new Set(['administrator']) }, 'No verification', AT);
    expect(change.type).toBe('escrow.refunded');
    expect(change.changes).toMatchObject({ status: 'refunded', settledToBuyerMinor: 10_100n, settledToSellerMinor: 0n, settledFeeMinor: 0n, payoutStatus: 'returned' });
    expect(change.posting?.plan).toMatchObject({ allowFrozen: true, entries: [{ account: { id: HOLDING }, amountMinor: -10_100n }, { account: walletIdentity(BUYER, 'XOF'), amountMinor: 10_100n }] });
    expect(change.payload).toEqual({ held_payout_id: HELD, payout_returned: true, reason: 'No verification', to_seller_minor: '0', to_buyer_minor: '10100', fee_minor: '0' });
    expect(change.rows).toEqual([
      {
        table: 'held_payouts',
        id: HELD,
        expect: { status: 'held_for_verification' },
        set: { status: 'returned', settled_at: '2026-11-29T09:00:00.000Z', returned_by_user_id: ADMIN, return_reason: 'No verification' },
        postingIds: { posting_id: 0 },
      },
    ]);
    expect(() => returnedRelease(accepted, heldRow(), { userId: BUYER, capacities: new Set(['buyer', 'administrator']) }, 'Mine', AT)).toThrow(/party to this escrow/);
  });
});

describe("a split ruling's share for the buyer, held", () => {
  const HELD_SHARE = '00000000-0000-4000-8000-0000000000f2';
  const disputed = { escrow: { ...escrow('disputed'), resolutionOutcome: 'split' as const, resolutionSellerAmountMinor: 4_000n }, holdingAccountId: HOLDING };
  const fee = { bps: 100, payer: 'buyer' as const, minimumMinor: 0n, totalMinor: 100n, buyerShareMinor: 100n, sellerShareMinor: 0n };
  const ruling = (plan = splitSettlement(10_000n, fee, 4_000n), status: 'released' | 'refunded' = 'released') => {
    const settled = settle(disputed, plan, () => status, AT);
    const resolution = { resolutionOutcome: 'split' as const, resolutionSellerAmountMinor: 4_000n, resolvedByUserId: ADMIN, resolvedAt: AT };
    return {
      type: 'escrow.resolved',
      payload: { outcome: 'split', seller_amount_minor: '4000', ...settled.amounts },
      changes: { ...resolution, ...settled.changes },
      posting: { plan: settled.posting, column: 'settlement_posting_id' as const, parties: settlementParties(disputed.escrow) },
    };
  };

  it('pays the seller and the fee now, holds the rest for the buyer: accepted, no settlement shown yet, escrow.payout_held', () => {
    const held = heldBuyerShare(disputed, ruling(), HELD_SHARE, AT);
    // 10,100 paid in: 4,000 to the seller, a fee of 40 on it, 6,060 back to the buyer.
    expect(held?.posting?.plan.entries).toEqual([
      { account: { id: HOLDING }, amountMinor: -4_040n },
      { account: walletIdentity(SELLER, 'XOF'), amountMinor: 4_000n },
      { account: shardIdentity('fees', 'XOF', ID), amountMinor: 40n },
    ]);
    expect(held?.posting).toMatchObject({ column: 'settlement_posting_id', plan: { kind: 'escrow.settlement', reference: ID, allowFrozen: false } });
    expect(held?.changes).toMatchObject({ status: 'accepted', resolutionOutcome: 'split', settledToSellerMinor: 4_000n, settledFeeMinor: 40n, payoutId: HELD_SHARE, payoutStatus: 'held_for_verification', payoutRecipient: 'buyer' });
    expect(held?.changes.settledToBuyerMinor).toBeUndefined();
    expect(held?.type).toBe('escrow.payout_held');
    expect(held?.payload).toEqual({ outcome: 'split', seller_amount_minor: '4000', to_seller_minor: '4000', fee_minor: '40', held_payout_id: HELD_SHARE, reason: 'recipient_limit', amount_minor: '6060' });
    expect(held?.rows).toEqual([expect.objectContaining({ table: 'held_payouts', op: 'insert', id: HELD_SHARE, set: expect.objectContaining({ recipient_user_id: BUYER, amount_minor: '6060' }) })]);
  });

  it('holds nothing of a settlement that pays the buyer nothing (a release) or nothing but the buyer (a refund: money returned, never limited)', () => {
    expect(heldBuyerShare(disputed, ruling(releaseSettlement(10_000n, fee)), HELD_SHARE, AT)).toBeUndefined();
    expect(heldBuyerShare(disputed, ruling(refundSettlement(10_000n, fee), 'refunded'), HELD_SHARE, AT)).toBeUndefined();
    // Each condition on its own: a split's amounts without its settlement posting, or with one
    // that may reach a frozen wallet (money returned), and a posting that pays nothing but the
    // buyer even when not marked as money returned.
    const split = ruling();
    expect(heldBuyerShare(disputed, { ...split, posting: undefined }, HELD_SHARE, AT)).toBeUndefined();
    expect(heldBuyerShare(disputed, { ...split, posting: { ...split.posting, plan: { ...split.posting.plan, allowFrozen: true } } }, HELD_SHARE, AT)).toBeUndefined();
    const buyerAlone = ruling(refundSettlement(10_000n, fee), 'released');
    expect(buyerAlone.posting.plan.allowFrozen).toBe(false);
    expect(heldBuyerShare(disputed, buyerAlone, HELD_SHARE, AT)).toBeUndefined();
  });

  it("keeps of the ruling only the columns it set, and holds a share whose seller's part all went to the minimum fee (the fee alone paid now)", () => {
    const held = heldBuyerShare(disputed, ruling(), HELD_SHARE, AT);
    // Strictly: the columns of KEPT_ON_HOLD the ruling did not set (acceptedAt, resolutionNote) are left out, not written as undefined.
    expect(held?.changes).toStrictEqual({
      resolutionOutcome: 'split',
      resolutionSellerAmountMinor: 4_000n,
      resolvedByUserId: ADMIN,
      resolvedAt: AT,
      status: 'accepted',
      autoReleaseAt: null,
      settledToSellerMinor: 4_000n,
      settledFeeMinor: 40n,
      payoutId: HELD_SHARE,
      payoutStatus: 'held_for_verification',
      payoutReason: 'recipient_limit',
      payoutHeldAt: AT,
      payoutSettledAt: null,
      payoutRecipient: 'buyer',
    });
    // The seller's fee, 500 at least, takes all of the seller's 300: 0 to the seller, 300 of fee
    // paid now, 9,700 held for the buyer.
    const minimumFee = { bps: 100, payer: 'seller' as const, minimumMinor: 500n, totalMinor: 500n, buyerShareMinor: 0n, sellerShareMinor: 500n };
    const feeOnly = heldBuyerShare(disputed, ruling(splitSettlement(10_000n, minimumFee, 300n)), HELD_SHARE, AT);
    expect(feeOnly?.changes).toMatchObject({ status: 'accepted', settledToSellerMinor: 0n, settledFeeMinor: 300n, payoutRecipient: 'buyer' });
    expect(feeOnly?.posting?.plan.entries).toEqual([
      { account: { id: HOLDING }, amountMinor: -300n },
      { account: shardIdentity('fees', 'XOF', ID), amountMinor: 300n },
    ]);
    expect(feeOnly?.payload).toMatchObject({ amount_minor: '9700' });
  });

  const shareHeld = () => {
    const row = holdPayout({ id: HELD_SHARE, subjectType: 'escrow', subjectId: ID, recipientUserId: BUYER, currency: 'XOF', amountMinor: 6_060n, at: AT }).row;
    const accepted = { escrow: { ...disputed.escrow, status: 'accepted' as const, payoutId: HELD_SHARE, settledToSellerMinor: 4_000n, settledFeeMinor: 40n }, holdingAccountId: HOLDING };
    return { row, accepted };
  };

  it('completes to the buyer alone (escrow.buyer_share, limited), the escrow released with the whole settlement, or is tried again later', () => {
    const { row, accepted } = shareHeld();
    const { change, retry } = completedRelease(accepted, row, AT);
    expect(change.type).toBe('escrow.released');
    expect(change.posting?.plan).toEqual({
      kind: 'escrow.buyer_share',
      reference: ID,
      metadata: { escrow_id: ID, held_payout_id: HELD_SHARE },
      allowFrozen: false,
      entries: [
        { account: { id: HOLDING }, amountMinor: -6_060n },
        { account: walletIdentity(BUYER, 'XOF'), amountMinor: 6_060n },
      ],
    });
    // The escrow's settlement posting stays the one that paid the seller.
    expect(change.posting?.column).toBeUndefined();
    expect(change.changes).toEqual({ status: 'released', settledToBuyerMinor: 6_060n, releasedAt: AT, payoutStatus: 'completed', payoutSettledAt: AT });
    expect(change.payload).toEqual({ held_payout_id: HELD_SHARE, to_seller_minor: '4000', to_buyer_minor: '6060', fee_minor: '40' });
    expect(change.rows).toEqual([expect.objectContaining({ table: 'held_payouts', id: HELD_SHARE, set: expect.objectContaining({ status: 'completed' }) })]);
    expect(retry).toMatchObject({ table: 'held_payouts', id: HELD_SHARE, set: { attempts: 1 } });
    // A share held needs the holding account the funding credited.
    expect(() => completedRelease({ ...accepted, holdingAccountId: null }, row, AT)).toThrow(`escrow ${ID} holds a share but its funding credited no holding account`);
    // Its completion holds nothing more: it pays the buyer alone.
    expect(heldBuyerShare(accepted, change, HELD, AT)).toBeUndefined();
    expect(heldRelease(accepted, change, HELD, AT)).toBeUndefined();
  });

  it("returned by an administrator, is paid to the buyer as money returned (not limited, a frozen wallet reached): released, payout returned", () => {
    const { row, accepted } = shareHeld();
    const change = returnedRelease(accepted, row, { userId: ADMIN, capacities: new Set(['administrator']) }, 'No verification', AT);
    expect(change.type).toBe('escrow.released');
    expect(change.posting?.plan).toMatchObject({ kind: 'escrow.buyer_share', allowFrozen: true });
    expect(change.changes).toMatchObject({ status: 'released', settledToBuyerMinor: 6_060n, payoutStatus: 'returned' });
    expect(change.payload).toMatchObject({ payout_returned: true, reason: 'No verification', to_buyer_minor: '6060' });
    expect(change.rows).toEqual([
      {
        table: 'held_payouts',
        id: HELD_SHARE,
        expect: { status: 'held_for_verification' },
        set: { status: 'returned', settled_at: '2026-11-29T09:00:00.000Z', returned_by_user_id: ADMIN, return_reason: 'No verification' },
        postingIds: { posting_id: 0 },
      },
    ]);
    expect(() => returnedRelease(accepted, row, { userId: BUYER, capacities: new Set(['buyer', 'administrator']) }, 'Mine', AT)).toThrow(/party to this escrow/);
  });

  it("the completion of a whole settlement held for the seller names the buyer's share too: the seller's held payout completed by the posting that pays the seller", () => {
    const sellerHeld = holdPayout({ id: HELD, subjectType: 'escrow', subjectId: ID, recipientUserId: SELLER, currency: 'XOF', amountMinor: 4_000n, at: AT }).row;
    const accepted = { escrow: { ...disputed.escrow, status: 'accepted' as const, payoutId: HELD }, holdingAccountId: HOLDING };
    const { change } = completedRelease(accepted, sellerHeld, AT);
    const held = heldBuyerShare(accepted, change, HELD_SHARE, AT);
    expect(held?.changes.status).toBeUndefined();
    expect(held?.changes).toMatchObject({ payoutId: HELD_SHARE, payoutRecipient: 'buyer', payoutSettledAt: null, settledToSellerMinor: 4_000n });
    expect(held?.rows).toEqual([
      expect.objectContaining({ table: 'held_payouts', id: HELD, set: expect.objectContaining({ status: 'completed' }), postingIds: { posting_id: 0 } }),
      expect.objectContaining({ table: 'held_payouts', op: 'insert', id: HELD_SHARE }),
    ]);
  });
});
