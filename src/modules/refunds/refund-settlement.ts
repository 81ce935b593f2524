import { ConflictError } from '../../errors';
import { clearingIdentity, type AccountIdentity } from '../ledger';
import type { PlannedPosting } from '../writes';

export type RefundStatus = 'pending' | 'succeeded' | 'failed';
export type RefundReason = 'requested_by_customer' | 'duplicate' | 'fraudulent' | 'other';

export interface Refund {
  id: string;
  organizationId: string;
  paymentId: string;
  /** The ledger account the payment credited: the refund's money leaves it, or comes back to it. */
  accountId: string;
  currency: string;
  amountMinor: bigint;
  reason: RefundReason;
  status: RefundStatus;
  failureCode: string | null;
  requestedByUserId: string | null;
  holdPostingId: string | null;
  settlementPostingId: string | null;
  settledAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** 409: the refunds of a payment would add up to more than it. */
export class RefundExceedsPaymentError extends ConflictError {
  constructor(amountMinor: bigint, refundableMinor: bigint) {
    super('RefundExceedsPayment', `The refunds of a payment never add up to more than it: ${refundableMinor} (minor units) is left to refund.`, {
      amount_minor: amountMinor.toString(),
      refundable_minor: refundableMinor.toString(),
    });
  }
}

/** 409: only a succeeded payment is refunded. */
export class PaymentNotRefundableError extends ConflictError {
  constructor(status: string) {
    super('PaymentNotRefundable', `This payment is ${status}: only a succeeded payment can be refunded.`, { status });
  }
}

/**
 * What a new refund may take: by default everything not yet refunded; never more, and never a
 * refund of nothing. `refundedMinor` counts the payment's pending and succeeded refunds, read
 * under the payment's lock: two refunds of one payment are decided one after the other.
 */
export function refundAmount(paymentMinor: bigint, refundedMinor: bigint, requestedMinor: bigint | undefined): bigint {
  const refundable = paymentMinor - refundedMinor;
  const amount = requestedMinor ?? refundable;
  if (amount <= 0n || amount > refundable) throw new RefundExceedsPaymentError(amount, refundable > 0n ? refundable : 0n);
  return amount;
}

/** Where refunds wait for their rail: the platform's refunds transit account of the currency. */
export function refundTransitIdentity(currency: string): AccountIdentity {
  return { ownerType: 'platform', ownerId: null, currency, kind: 'rail_transit', externalRef: 'refunds' };
}

/**
 * The refund's hold, when it is asked: the account the payment credited -> the refunds' transit
 * account. The ledger refuses it when the account no longer holds the amount, so two refunds
 * (or a refund and a payout) never spend the same money: a pending refund's money is gone from
 * the account, not merely promised.
 */
export function holdPosting(refund: Refund): PlannedPosting {
  return {
    kind: 'refund.hold',
    reference: refund.id,
    metadata: { refund_id: refund.id, payment_id: refund.paymentId },
    entries: [
      { account: { id: refund.accountId }, amountMinor: -refund.amountMinor },
      { account: refundTransitIdentity(refund.currency), amountMinor: refund.amountMinor },
    ],
  };
}

/**
 * The refund's settlement: out to the currency's clearing account (the payment came in from it)
 * when the rail paid the customer, back to the account when it failed (even a frozen one: it is
 * the account's own money returning).
 */
export function settlementPosting(refund: Refund, outcome: Exclude<RefundStatus, 'pending'>): PlannedPosting {
  const to: PlannedPosting['entries'][number]['account'] = outcome === 'succeeded' ? clearingIdentity(refund.currency) : { id: refund.accountId };
  return {
    kind: 'refund.settlement',
    reference: refund.id,
    metadata: { refund_id: refund.id, payment_id: refund.paymentId, status: outcome },
    allowFrozen: outcome === 'failed',
    entries: [
      { account: refundTransitIdentity(refund.currency), amountMinor: -refund.amountMinor },
      { account: to, amountMinor: refund.amountMinor },
    ],
  };
}
