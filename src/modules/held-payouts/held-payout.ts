import type { RowChange } from '../writes';

/**
 * A payout held for verification (pure): an escrow's release, a tontine's pot or a crypto
 * deposit's credit that would take its recipient over one of their tier limits. The ledger decides: the payout's decision names
 * the one that holds it (`Decision.hold`), and when ledger_post refuses the payout for the
 * recipient's own limits (a LimitExceeded on the payee's side, whose owner is the recipient)
 * write_apply applies that one instead, in the same statement: the money stays where it is held
 * (the escrow's holding shard, the tontine's pool, the network's clearing account), this row
 * records it, and the object shows it (`payout`, a deposit's `credit`). The job completes it once
 * the limits allow; an administrator may return it to its payer (a deposit has none on the
 * platform: never returned).
 */

export type HeldPayoutStatus = 'held_for_verification' | 'completed' | 'returned';
export type HeldPayoutSubject = 'escrow' | 'tontine' | 'crypto_deposit';

/** Why a payout is held: the recipient's limits (which one is never told to the payer). */
export const HELD_PAYOUT_REASON = 'recipient_limit';

export interface HeldPayout {
  id: string;
  subjectType: HeldPayoutSubject;
  subjectId: string;
  /** The tontine's cycle whose pot is held; null for an escrow or a crypto deposit. */
  cycleNumber: number | null;
  recipientUserId: string;
  currency: string;
  amountMinor: bigint;
  reason: typeof HELD_PAYOUT_REASON;
  status: HeldPayoutStatus;
  postingId: string | null;
  returnedByUserId: string | null;
  returnReason: string | null;
  heldAt: Date;
  settledAt: Date | null;
  nextAttemptAt: Date;
  attempts: number;
}

/** What an escrow or a cycle shows of its held payout (the contract's `HeldPayoutState`). */
export interface PayoutState {
  id: string;
  status: HeldPayoutStatus;
  reason: typeof HELD_PAYOUT_REASON;
  held_at: string;
  settled_at: string | null;
}

/** The first try of the job comes this long after the hold, then backs off (see nextAttemptAfter). */
export const FIRST_ATTEMPT_AFTER_MS = 60_000;

/** When the job tries a held payout again after `attempts` tries: a minute, doubling, at most a day. */
export function nextAttemptAfter(attempts: number, now: Date): Date {
  const delay = Math.min(FIRST_ATTEMPT_AFTER_MS * 2 ** Math.min(attempts, 20), 86_400_000);
  return new Date(now.getTime() + delay);
}

/** The held payout tried again later, after one more attempt (the recipient's limits still refuse it): only while it is still held. */
export function retryHeldPayout(held: HeldPayout, now: Date): RowChange {
  return {
    table: 'held_payouts',
    id: held.id,
    expect: { status: 'held_for_verification' },
    set: { attempts: held.attempts + 1, next_attempt_at: nextAttemptAfter(held.attempts + 1, now).toISOString() },
  };
}

/** A payout held now: the row a decision inserts (`id` chosen by the caller, so the subject can name it). */
export function holdPayout(input: {
  id: string;
  subjectType: HeldPayoutSubject;
  subjectId: string;
  cycleNumber?: number;
  recipientUserId: string;
  currency: string;
  amountMinor: bigint;
  at: Date;
}): { row: HeldPayout; change: RowChange } {
  const row: HeldPayout = {
    id: input.id,
    subjectType: input.subjectType,
    subjectId: input.subjectId,
    cycleNumber: input.cycleNumber ?? null,
    recipientUserId: input.recipientUserId,
    currency: input.currency,
    amountMinor: input.amountMinor,
    reason: HELD_PAYOUT_REASON,
    status: 'held_for_verification',
    postingId: null,
    returnedByUserId: null,
    returnReason: null,
    heldAt: input.at,
    settledAt: null,
    nextAttemptAt: new Date(input.at.getTime() + FIRST_ATTEMPT_AFTER_MS),
    attempts: 0,
  };
  return {
    row,
    change: {
      table: 'held_payouts',
      op: 'insert',
      id: row.id,
      set: {
        subject_type: row.subjectType,
        subject_id: row.subjectId,
        cycle_number: row.cycleNumber,
        recipient_user_id: row.recipientUserId,
        currency: row.currency,
        amount_minor: row.amountMinor.toString(),
        reason: row.reason,
        status: row.status,
        held_at: row.heldAt.toISOString(),
        next_attempt_at: row.nextAttemptAt.toISOString(),
      },
    },
  };
}

/**
 * A held payout settled: `completed` (the payout posted) or `returned` (its money back to the
 * payer, by an administrator), its posting the decision's posting at `postingIndex`; only while
 * it is still held, so two settlements never both apply.
 */
export function settleHeldPayout(
  held: HeldPayout,
  outcome: { status: 'completed' } | { status: 'returned'; byUserId: string; reason: string },
  at: Date,
  postingIndex: number,
): { row: HeldPayout; change: RowChange } {
  const returned = outcome.status === 'returned' ? { returnedByUserId: outcome.byUserId, returnReason: outcome.reason } : {};
  const row: HeldPayout = { ...held, ...returned, status: outcome.status, settledAt: at };
  return {
    row,
    change: {
      table: 'held_payouts',
      id: held.id,
      expect: { status: 'held_for_verification' },
      set: {
        status: outcome.status,
        settled_at: at.toISOString(),
        ...(outcome.status === 'returned' ? { returned_by_user_id: outcome.byUserId, return_reason: outcome.reason } : {}),
      },
      postingIds: { posting_id: postingIndex },
    },
  };
}

/** What the escrow or the cycle shows of a held payout. */
export function payoutState(held: Pick<HeldPayout, 'id' | 'status' | 'reason' | 'heldAt' | 'settledAt'>): PayoutState {
  return { id: held.id, status: held.status, reason: held.reason, held_at: held.heldAt.toISOString(), settled_at: held.settledAt?.toISOString() ?? null };
}
