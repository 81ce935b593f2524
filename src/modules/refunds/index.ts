/** Public face of the refunds module: refunds of payments. */
export { RefundService, PaymentNotFoundError, refundStatusOf, withRefunds } from './refund-service';
export { paymentsWithRefunds, refundHandlers, refundWritePath } from './refund-handlers';
export { SandboxRefundRail, type RefundRail, type RefundOutcome } from './refund-rail';
export { holdPosting, refundAmount, refundTransitIdentity, settlementPosting as refundSettlementPosting, RefundExceedsPaymentError, type Refund } from './refund-settlement';
