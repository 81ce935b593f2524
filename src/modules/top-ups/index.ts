/** Public face of the top-ups module: money in by mobile money. */
export { TopUpService, topUpStatusOf, PENDING_CHECK_AFTER_MS, type CreateTopUpInput } from './top-up-service';
export { topUpHandlers, topUpWritePath } from './top-up-handlers';
export { topUpJobs } from './top-up-jobs';
export { SandboxMobileMoneyRail, MOBILE_MONEY_PROVIDERS, type MobileMoneyRail, type MobileMoneyProvider, type CollectionOutcome, type CollectionStatus } from './mobile-money-rail';
export { CALLBACK_TOLERANCE_SECONDS, verifyCallback } from './callback-signature';
export { creditPosting, postingPlan as topUpPostingPlan, railClearingIdentity, reversalCode, settlement as topUpSettlement, type TopUp, type TopUpStatus } from './top-up-settlement';
