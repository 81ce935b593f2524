import type { WalletPosting } from '../ledger';
import { holdPayout, HELD_PAYOUT_REASON, retryHeldPayout, settleHeldPayout, type HeldPayout } from '../held-payouts';
import type { PlannedPosting, RowChange } from '../writes';
import { refundSettlement, releaseSettlement, splitSettlement, type Settlement } from './escrow-fee';
import { statusAfterPayoutStep, type EscrowCapacity } from './escrow-lifecycle';
import type { Escrow } from './escrow-repository';
import { feeOf, settle, settlementParties, type EscrowInLedger } from './escrow-settlement';

/**
 * The held payout of an escrow (pure): a release (an accept, the automatic release, a ruling
 * that pays the seller) names, besides its own change, the change that holds it when the
 * seller's limits refuse it (write_apply applies that one instead: the escrow `accepted`, the
 * money still in its holding shard, a `held_payouts` row, `escrow.payout_held`); later, the
 * completion (the settlement the release would have made, `escrow.released`) or, by an
 * administrator, the return of everything the buyer paid (`escrow.refunded`).
 */

/** What one action changes: the row, and its one event (type and internal payload). */
export interface EscrowChange {
  changes: Partial<Escrow>;
  type: string;
  payload: Record<string, unknown>;
  /** The posting it makes (one at most), whose id the row records in `postingColumn`. */
  posting?: { plan: PlannedPosting; column: 'funding_posting_id' | 'settlement_posting_id'; parties: WalletPosting };
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
    },
    rows: [held.change],
  };
}

/** The settlement a held release makes when it completes: the ruling's (a release or a split), or an accept's. */
function heldSettlement(escrow: Escrow): Settlement {
  const fee = feeOf(escrow);
  if (escrow.resolutionOutcome === 'split' && escrow.resolutionSellerAmountMinor !== null) return splitSettlement(escrow.amountMinor, fee, escrow.resolutionSellerAmountMinor);
  return releaseSettlement(escrow.amountMinor, fee);
}

/**
 * The held payout completed (the job): the settlement it held, the escrow `released`, the
 * payout `completed`, `escrow.released`. When the seller's limits still refuse it, `retry` is
 * applied instead: the held payout tried again later.
 */
export function completedRelease(locked: EscrowInLedger, held: HeldPayout, now: Date): { change: EscrowChange; retry: RowChange } {
  const { escrow } = locked;
  const settled = settle(locked, heldSettlement(escrow), (outcome) => statusAfterPayoutStep('complete_payout', escrow, 'platform', now, outcome), now);
  const completed = settleHeldPayout(held, { status: 'completed' }, now, 0);
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
 * The held payout returned to the buyer by an administrator who is not a party (the lifecycle's
 * `return_payout`): everything the buyer paid, no fee, the escrow `refunded`, the payout
 * `returned`, `escrow.refunded`. Money going back reaches a frozen wallet and is not limited.
 */
export function returnedRelease(locked: EscrowInLedger, held: HeldPayout, admin: { userId: string; capacities: ReadonlySet<EscrowCapacity> }, reason: string, now: Date): EscrowChange {
  const { escrow } = locked;
  const settled = settle(locked, refundSettlement(escrow.amountMinor, feeOf(escrow)), (outcome) => statusAfterPayoutStep('return_payout', escrow, admin.capacities, now, outcome), now);
  const returned = settleHeldPayout(held, { status: 'returned', byUserId: admin.userId, reason }, now, 0);
  return {
    type: 'escrow.refunded',
    payload: { held_payout_id: held.id, payout_returned: true, reason, ...settled.amounts },
    changes: { ...settled.changes, payoutStatus: 'returned', payoutSettledAt: now },
    posting: { plan: settled.posting, column: 'settlement_posting_id', parties: settlementParties(escrow) },
    rows: [returned.change],
  };
}
