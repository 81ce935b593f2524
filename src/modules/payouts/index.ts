/** Public face of the payouts module: payouts of organisations (money out). */
export { PayoutService, PayoutNotFoundError, payoutStatusOf } from './payout-service';
export { payoutHandlers, payoutWritePath } from './payout-handlers';
export { SandboxPayoutRail, type PayoutRail, type PayoutRailOutcome } from './payout-rail';
export {
  approvalThresholdMinor,
  approvalThresholds,
  checkAction,
  DEFAULT_APPROVAL_THRESHOLD_XOF,
  InvalidPayoutStateError,
  OrganizationNotVerifiedError,
  payoutTransitIdentity,
  requiresApproval,
  reservePosting,
  SameApproverError,
  settlementPosting as payoutSettlementPosting,
  type Payout,
  type PayoutStatus,
} from './payout-plan';
