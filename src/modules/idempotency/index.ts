/** Public face of the idempotency module: Idempotency-Key bookkeeping for every mutation. */
export { CompletedByThisRequest, IdempotencyService, canonicalJson, keyAlreadyProcessed, keyReused, requestHash, validateIdempotencyKey } from './idempotency-service';
export type { IdempotencyKeyView, IdempotencyServiceOptions, IdempotentOutcome, IdempotentRequest, RefusedOutcome, IdempotentResource, ResourceStatusReader } from './idempotency-service';
export { idempotencyHandlers } from './idempotency-handlers';
export { idempotencyJobs } from './idempotency-jobs';
export { pendingKeyOf, withPendingKey, NO_KEY_ARGUMENTS, PendingKey, type ClaimAttempt, type ClaimedKey } from './pending-key';
export type { KeyClaimedInRead } from './idempotency-service';
