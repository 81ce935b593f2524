import { loadLimitPolicy, uniformPolicy, type LimitPolicy } from '../../src/modules/limits';

/** The caps shipped in src/modules/limits/tier-policy.json: what a test of the limits themselves installs. */
export const SHIPPED_LIMIT_POLICY: LimitPolicy = loadLimitPolicy();

/**
 * The policy of every other test app: the shipped currencies and tiers, with caps no test
 * reaches, so tests that fund users generously test what they name, not the tier limits.
 */
export const UNBOUNDED_LIMIT_POLICY: LimitPolicy = uniformPolicy(SHIPPED_LIMIT_POLICY, 10n ** 18n, 'test-unbounded');
