import { holdPayout, retryHeldPayout, settleHeldPayout, type HeldPayout } from '../held-payouts';
import type { RowChange } from '../writes';
import { depositCreditPosting } from './crypto-deposit-lifecycle';
import type { Deposit } from './crypto-deposit-presenter';

/**
 * A crypto deposit's credit held for verification (pure). The coins of a final deposit are at
 * the platform's address whatever its owner's limits say: the credit is never refused. Its
 * decision names the one that holds it (`Decision.hold`): when ledger_post refuses the credit
 * for the owner's own limits as payee (a stablecoin balance or monthly inflow cap), write_apply
 * applies that one instead, in the same statement: the deposit `held_for_verification`, the
 * coins still in the network's clearing account, a `held_payouts` row. The held payouts' job
 * later credits it (the same posting, so credited exactly once), or notes one more attempt
 * while the limits still refuse it. A held deposit has no payer on the platform: it is never
 * returned.
 */

/** The final deposit held instead of credited, and the row of its held payout (`heldPayoutId` chosen by the caller). */
export function heldDeposit(final: Deposit, heldPayoutId: string, now: Date): { deposit: Deposit; heldPayout: RowChange } {
  const deposit: Deposit = { ...final, status: 'held_for_verification', completedAt: null, heldPayoutId, heldAt: now, updatedAt: now };
  const { change } = holdPayout({
    id: heldPayoutId,
    subjectType: 'crypto_deposit',
    subjectId: final.id,
    recipientUserId: final.userId,
    currency: final.asset,
    amountMinor: final.amountMinor,
    at: now,
  });
  return { deposit, heldPayout: change };
}

/** Whether the deposit is still held by `held` (what the job may credit). */
export function isHeldCreditOf(deposit: Pick<Deposit, 'id' | 'status' | 'heldPayoutId'>, held: Pick<HeldPayout, 'id' | 'subjectId'>): boolean {
  return deposit.status === 'held_for_verification' && deposit.heldPayoutId === held.id && held.subjectId === deposit.id;
}

/**
 * The held deposit credited (the job): the credit posting a final deposit makes (same kind and
 * reference: credited once), the deposit `completed`, the held payout `completed` (its posting
 * the credit); `retry` is what write_apply applies instead while the owner's limits still refuse
 * it (the held payout tried again later, the deposit unchanged).
 */
export function creditedHeldDeposit(deposit: Deposit, held: HeldPayout, now: Date) {
  const completed: Deposit = { ...deposit, status: 'completed', completedAt: now, updatedAt: now };
  return {
    deposit: completed,
    posting: depositCreditPosting(completed),
    heldPayout: settleHeldPayout(held, { status: 'completed' }, now, 0).change,
    retry: retryHeldPayout(held, now),
  };
}
