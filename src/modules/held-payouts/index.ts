/** Public face of the held payouts: import from here, not from the files inside. */
export { FIRST_ATTEMPT_AFTER_MS, HELD_PAYOUT_REASON, holdPayout, nextAttemptAfter, payoutState, retryHeldPayout, settleHeldPayout, type HeldPayout, type HeldPayoutStatus, type HeldPayoutSubject, type PayoutState } from './held-payout';
export { HeldPayoutService, type HeldPayoutView, type PayoutSubject } from './held-payout-service';
export { heldPayoutHandlers } from './held-payout-handlers';
export { heldPayoutJobs } from './held-payout-jobs';
