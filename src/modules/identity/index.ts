/** Public face of the identity module: verification sessions (KYC), their review, tiers, and closing an account. */
export { identityHandlers } from './identity-handlers';
export { identityJobs } from './identity-jobs';
export { SandboxIdentityProvider, type IdentityProvider, type ProviderCheck, type ProviderOutcome } from './identity-provider';
export { IdentityService, REJECTION_REASONS, SESSION_LIFETIME_MS, type RejectionReason } from './identity-service';
export { TIER_ORDER, type RequestedTier, type SessionStatus, type Tier } from './identity-types';
