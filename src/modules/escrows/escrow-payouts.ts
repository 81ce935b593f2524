import { walletIdentity, type WalletPosting } from '../ledger';
import { holdPayout, HELD_PAYOUT_REASON, retryHeldPayout, settleHeldPayout, type HeldPayout } from '../held-payouts';
import type { PlannedPosting, RowChange } from '../writes';
import { refundSettlement, releaseSettlement, splitSettlement, type Settlement } from './escrow-fee';
import { statusAfterPayoutStep, type EscrowCapacity, type EscrowStatus, type SettlementOutcome } from './escrow-lifecycle';
import type { Escrow } from './escrow-repository';
import { feeOf, settle, settlementParties, settlementPosting, type EscrowInLedger } from './escrow-settlement';

/**
 * The held payouts of an escrow (pure). A settlement that pays the seller (an accept, the
 * automatic release, a ruling) names, besides its own change, the change that holds it when the
 * seller's limits refuse it (write_apply applies that one instead: the escrow `accepted`, the
 * money still in its holding shard, a `held_payouts` row for the seller, `escrow.payout_held`);
 * later, the completion (the settlement the release would have made, `escrow.released`) or, by
 * an administrator, the return of everything the buyer paid (`escrow.refunded`).
 *
 * A split ruling pays both parties in one posting, so it names one alternative per party: the
 * seller's (above: the whole settlement waits, the buyer's share with it) and the buyer's (the
 * seller and the fee paid now, the buyer's share held for the buyer in the holding shard), whose
 * own posting names the seller's alternative in turn (both over their caps: the whole settlement
 * waits). The completion of a whole settlement held for the seller names the buyer's alternative
 * too. So an escrow holds one payout at a time, the one its `payout` shows. The buyer's share
 * completes to the buyer (`escrow.buyer_share`, `escrow.released`); returning it to its payer is
 * the same move (it is the buyer's own money), as money returned: not limited, a frozen wallet
 * reached.
 */

/** What one action changes: the row, and its one event (type and internal payload). */
export interface EscrowChange {
  changes: Partial<Escrow>;
  type: string;
  payload: Record<string, unknown>;
  /** The posting it makes (one at most), whose id the row records in `column` (when it names one). */
  posting?: { plan: PlannedPosting; column?: 'funding_posting_id' | 'settlement_posting_id'; parties: WalletPosting };
  /** Other rows it writes (a held payout's). */
  rows?: RowChange[];
}

/** The columns of a release that the hold keeps (who accepted, the ruling); the settlement's are left for the completion. */
const KEPT_ON_HOLD: ReadonlyArray<keyof Escrow> = ['acceptedAt', 'resolutionOutcome', 'resolutionSellerAmountMinor', 'resolutionNote', 'resolvedByUserId', 'resolvedAt'];

/**
 * The change that holds `release` (a settlement that pays the seller) when the seller's limits
 * refuse it, or undefined for a change that pays the seller nothing (nothing to hold).
 */
export function heldRelease(locked: EscrowInLedger, release: EscrowChange, heldPayoutId: string, now: Date): EscrowChange | undefined {
  const { escrow } = locked;
  const toSellerMinor = release.changes.settledToSellerMinor ?? 0n;
  if (release.posting?.column !== 'settlement_posting_id' || toSellerMinor <= 0n) return undefined;
  const kept = Object.fromEntries(KEPT_ON_HOLD.filter((column) => release.changes[column] !== undefined).map((column) => [column, release.changes[column]]));
  const held = holdPayout({ id: heldPayoutId, subjectType: 'escrow', subjectId: escrow.id, recipientUserId: escrow.sellerUserId, currency: escrow.currency, amountMinor: toSellerMinor, at: now });
  const { to_seller_minor: _toSeller, to_buyer_minor: _toBuyer, fee_minor: _fee, ...payload } = release.payload;
  return {
    type: 'escrow.payout_held',
    payload: { ...payload, held_payout_id: heldPayoutId, reason: HELD_PAYOUT_REASON, amount_minor: toSellerMinor.toString() },
    changes: {
      ...kept,
      status: statusAfterPayoutStep('hold_payout', escrow, 'platform', now),
      autoReleaseAt: null,
      payoutId: heldPayoutId,
      payoutStatus: 'held_for_verification',
      payoutReason: HELD_PAYOUT_REASON,
      payoutHeldAt: now,
      payoutRecipient: 'seller',
    },
    rows: [held.change],
  };
}

/**
 * The change that holds the buyer's share of `release` (a split's settlement, or the completion
 * of one held for the seller) when the buyer's limits refuse it: the seller and the fee paid now
 * (the settlement without the buyer's part), the buyer's share kept in the holding shard and
 * held for the buyer, the escrow `accepted`. Undefined for a settlement that pays the buyer
 * nothing, or nothing but the buyer (money returned: never limited).
 */
export function heldBuyerShare(locked: EscrowInLedger, release: EscrowChange, heldPayoutId: string, now: Date): EscrowChange | undefined {
  const { escrow } = locked;
  const toBuyerMinor = release.changes.settledToBuyerMinor ?? 0n;
  const toSellerMinor = release.changes.settledToSellerMinor ?? 0n;
  const feeMinor = release.changes.settledFeeMinor ?? 0n;
  if (release.posting?.column !== 'settlement_posting_id' || release.posting.plan.allowFrozen || toBuyerMinor <= 0n || toSellerMinor + feeMinor <= 0n) return undefined;
  const kept = Object.fromEntries(KEPT_ON_HOLD.filter((column) => release.changes[column] !== undefined).map((column) => [column, release.changes[column]]));
  const held = holdPayout({ id: heldPayoutId, subjectType: 'escrow', subjectId: escrow.id, recipientUserId: escrow.buyerUserId, currency: escrow.currency, amountMinor: toBuyerMinor, at: now });
  const paid = settlementPosting(locked, { heldMinor: toSellerMinor + feeMinor, toSellerMinor, toBuyerMinor: 0n, feeMinor }, 'accepted');
  const { to_buyer_minor: _toBuyer, ...payload } = release.payload;
  return {
    type: 'escrow.payout_held',
    payload: { ...payload, held_payout_id: heldPayoutId, reason: HELD_PAYOUT_REASON, amount_minor: toBuyerMinor.toString() },
    changes: {
      ...kept,
      // A whole settlement held for the seller is `accepted` already.
      ...(escrow.status === 'accepted' ? {} : { status: statusAfterPayoutStep('hold_payout', escrow, 'platform', now) }),
      autoReleaseAt: null,
      settledToSellerMinor: toSellerMinor,
      settledFeeMinor: feeMinor,
      payoutId: heldPayoutId,
      payoutStatus: 'held_for_verification',
      payoutReason: HELD_PAYOUT_REASON,
      payoutHeldAt: now,
      payoutSettledAt: null,
      payoutRecipient: 'buyer',
    },
    posting: { plan: paid, column: 'settlement_posting_id', parties: settlementParties(escrow) },
    // The seller's held payout, when this completes it, posted by the same posting.
    rows: [...(release.rows ?? []), held.change],
  };
}

/** The settlement a held release makes when it completes: the ruling's (a release or a split), or an accept's. */
function heldSettlement(escrow: Escrow): Settlement {
  const fee = feeOf(escrow);
  if (escrow.resolutionOutcome === 'split' && escrow.resolutionSellerAmountMinor !== null) return splitSettlement(escrow.amountMinor, fee, escrow.resolutionSellerAmountMinor);
  return releaseSettlement(escrow.amountMinor, fee);
}

/** Whether `held` is the buyer's share of a split (the seller paid when it was held). */
function isBuyerShare(escrow: Escrow, held: HeldPayout): boolean {
  return held.recipientUserId === escrow.buyerUserId;
}

/**
 * The buyer's held share out of the holding shard to the buyer: checked against the buyer's
 * limits when the job completes it, money returned (not limited, a frozen wallet reached) when an
 * administrator returns it.
 */
function buyerSharePosting(locked: EscrowInLedger, held: HeldPayout, returned: boolean): PlannedPosting {
  const { escrow, holdingAccountId } = locked;
  if (!holdingAccountId) throw new Error(`escrow ${escrow.id} holds a share but its funding credited no holding account`);
  return {
    kind: 'escrow.buyer_share',
    reference: escrow.id,
    metadata: { escrow_id: escrow.id, held_payout_id: held.id },
    allowFrozen: returned,
    entries: [
      { account: { id: holdingAccountId }, amountMinor: -held.amountMinor },
      { account: walletIdentity(escrow.buyerUserId, escrow.currency), amountMinor: held.amountMinor },
    ],
  };
}

/** The buyer's held share paid to the buyer (completed, or returned): the escrow `released` as the ruling decided. */
function settledBuyerShare(locked: EscrowInLedger, held: HeldPayout, status: EscrowStatus, outcome: 'completed' | 'returned', now: Date): Pick<EscrowChange, 'changes' | 'posting'> & { amounts: Record<string, string> } {
  const { escrow } = locked;
  const amounts = { to_seller_minor: String(escrow.settledToSellerMinor ?? 0n), to_buyer_minor: held.amountMinor.toString(), fee_minor: String(escrow.settledFeeMinor ?? 0n) };
  return {
    amounts,
    changes: { status, settledToBuyerMinor: held.amountMinor, ...(status === 'released' ? { releasedAt: now } : { refundedAt: now }), payoutStatus: outcome, payoutSettledAt: now },
    posting: { plan: buyerSharePosting(locked, held, outcome === 'returned'), parties: settlementParties(escrow) },
  };
}

/** What the seller and the fee received already when the buyer's share was held. */
function paidBeforeBuyerShare(escrow: Escrow): SettlementOutcome {
  return { toSellerMinor: escrow.settledToSellerMinor ?? 0n, feeMinor: escrow.settledFeeMinor ?? 0n };
}

/**
 * The held payout completed (the job): the settlement it held, the escrow `released`, the
 * payout `completed`, `escrow.released` (the buyer's share of a split: that share alone). When
 * its recipient's limits still refuse it, `retry` is applied instead: the held payout tried
 * again later.
 */
export function completedRelease(locked: EscrowInLedger, held: HeldPayout, now: Date): { change: EscrowChange; retry: RowChange } {
  const { escrow } = locked;
  const completed = settleHeldPayout(held, { status: 'completed' }, now, 0);
  if (isBuyerShare(escrow, held)) {
    const status = statusAfterPayoutStep('complete_payout', escrow, 'platform', now, paidBeforeBuyerShare(escrow));
    const share = settledBuyerShare(locked, held, status, 'completed', now);
    return { change: { type: 'escrow.released', payload: { held_payout_id: held.id, ...share.amounts }, changes: share.changes, posting: share.posting, rows: [completed.change] }, retry: retryHeldPayout(held, now) };
  }
  const settled = settle(locked, heldSettlement(escrow), (outcome) => statusAfterPayoutStep('complete_payout', escrow, 'platform', now, outcome), now);
  return {
    change: {
      type: 'escrow.released',
      payload: { held_payout_id: held.id, ...settled.amounts },
      changes: { ...settled.changes, payoutStatus: 'completed', payoutSettledAt: now },
      posting: { plan: settled.posting, column: 'settlement_posting_id', parties: settlementParties(escrow) },
      rows: [completed.change],
    },
    retry: retryHeldPayout(held, now),
  };
}

/**
 * The held payout returned to its payer, the buyer, by an administrator who is not a party (the
 * lifecycle's `return_payout`): everything the buyer paid, no fee, the escrow `refunded`, the
 * payout `returned`, `escrow.refunded`. The buyer's share of a split is the buyer's own money:
 * returned, it is paid to the buyer (the seller was paid already), the escrow `released` as the
 * ruling decided, `escrow.released`. Money going back reaches a frozen wallet and is not limited.
 */
export function returnedRelease(locked: EscrowInLedger, held: HeldPayout, admin: { userId: string; capacities: ReadonlySet<EscrowCapacity> }, reason: string, now: Date): EscrowChange {
  const { escrow } = locked;
  const returned = settleHeldPayout(held, { status: 'returned', byUserId: admin.userId, reason }, now, 0);
  if (isBuyerShare(escrow, held)) {
    const status = statusAfterPayoutStep('return_payout', escrow, admin.capacities, now, paidBeforeBuyerShare(escrow));
    const share = settledBuyerShare(locked, held, status, 'returned', now);
    return { type: 'escrow.released', payload: { held_payout_id: held.id, payout_returned: true, reason, ...share.amounts }, changes: share.changes, posting: share.posting, rows: [returned.change] };
  }
  const settled = settle(locked, refundSettlement(escrow.amountMinor, feeOf(escrow)), (outcome) => statusAfterPayoutStep('return_payout', escrow, admin.capacities, now, outcome), now);
  return {
    type: 'escrow.refunded',
    payload: { held_payout_id: held.id, payout_returned: true, reason, ...settled.amounts },
    changes: { ...settled.changes, payoutStatus: 'returned', payoutSettledAt: now },
    posting: { plan: settled.posting, column: 'settlement_posting_id', parties: settlementParties(escrow) },
    rows: [returned.change],
  };
}
