/** Public face of the limits module: the tier policy, its enforcement's refusals, the limits' reads. */
export { LIMITS, TIERS, LIMIT_POLICY_FILE, LimitPolicyError, loadLimitPolicy, nextTierOf, organizationTier, parseLimitPolicy, uniformPolicy, type LimitName, type LimitPolicy, type NextTier, type Tier } from './limit-policy';
export { asOwnLimit, limitDetailOf, limitExceeded, limitRefusal, recipientCannotReceive, type LimitRefusalDetail } from './limit-refusals';
export { limitsView, type LimitsView } from './limit-usage';
export { LimitsService } from './limits-service';
export { limitsHandlers } from './limits-handlers';
