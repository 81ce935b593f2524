import { LIMITS, TIERS, loadLimitPolicy, parseLimitPolicy, type LimitPolicy } from '../../src/modules/limits';

/** The caps shipped in src/modules/limits/tier-policy.json: what a test of the limits themselves installs. */
export const SHIPPED_LIMIT_POLICY: LimitPolicy = loadLimitPolicy();

const NO_CAP = '1000000000000000000';

/**
 * The policy of every other test app: the shipped currencies and tiers, with caps no test
 * reaches, so tests that fund users generously test what they name, not the tier limits.
 */
export const UNBOUNDED_LIMIT_POLICY: LimitPolicy = parseLimitPolicy(
  {
    version: 'test-unbounded',
    currencies: Object.fromEntries(
      [...SHIPPED_LIMIT_POLICY.currencies.keys()].map((currency) => [currency, Object.fromEntries(TIERS.map((tier) => [tier, Object.fromEntries(LIMITS.map((limit) => [limit, NO_CAP]))]))]),
    ),
  },
  'test-unbounded',
);
