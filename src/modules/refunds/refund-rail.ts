/**
 * The rail that pays a refund back to the customer (the card network, the mobile-money provider
 * the payment came from). It answers at once in the sandbox: a refund whose amount in minor
 * units ends in `13` is declined (`refund_declined`), any other succeeds.
 */
export type RefundOutcome = { status: 'succeeded' } | { status: 'failed'; failureCode: string };

export interface RefundRail {
  /** Pays the refund back. Idempotent on `refundId`. */
  refund(request: { refundId: string; paymentId: string; currency: string; amountMinor: bigint }): Promise<RefundOutcome>;
}

export class SandboxRefundRail implements RefundRail {
  refund(request: { amountMinor: bigint }): Promise<RefundOutcome> {
    return Promise.resolve(request.amountMinor % 100n === 13n ? { status: 'failed', failureCode: 'refund_declined' } : { status: 'succeeded' });
  }
}
