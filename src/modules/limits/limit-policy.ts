import fs from 'node:fs';
import path from 'node:path';

/**
 * The tier policy: for each currency and tier, four caps in minor units. It is data, shipped
 * as `tier-policy.json` beside this file with a `version`, read and validated once at boot
 * (a malformed file stops the process with one clear line), then written to the database's
 * `limit_policies` table, which ledger_post reads under its account locks.
 */
export const LIMIT_POLICY_FILE = path.join(__dirname, 'tier-policy.json');

/** The tiers of users (users.tier) and of organisations (verified or not). */
export const USER_TIERS = ['tier_0', 'tier_1', 'tier_2'] as const;
export const ORGANIZATION_TIERS = ['unverified', 'verified'] as const;
export const TIERS = [...USER_TIERS, ...ORGANIZATION_TIERS] as const;
export type Tier = (typeof TIERS)[number];

export const LIMITS = ['balance', 'monthly_inflow', 'daily_outflow', 'per_transaction'] as const;
export type LimitName = (typeof LIMITS)[number];

/** The caps of one tier in one currency, in minor units. */
export type TierCaps = Readonly<Record<LimitName, bigint>>;

export interface LimitPolicy {
  version: string;
  /** Currency code -> tier -> caps. A currency absent here is not limited. */
  currencies: ReadonlyMap<string, ReadonlyMap<Tier, TierCaps>>;
}

/** What the next tier needs: shown with the limits and in a LimitExceeded refusal. */
export interface NextTier {
  tier: Tier;
  requires: 'identity_verification' | 'identity_documents' | 'business_verification';
}

const NEXT_TIER: Readonly<Record<Tier, NextTier | null>> = {
  tier_0: { tier: 'tier_1', requires: 'identity_verification' },
  tier_1: { tier: 'tier_2', requires: 'identity_documents' },
  tier_2: null,
  unverified: { tier: 'verified', requires: 'business_verification' },
  verified: null,
};

export function nextTierOf(tier: Tier): NextTier | null {
  return NEXT_TIER[tier];
}

/** The tier of an organisation: its verification status, verified or anything else. */
export function organizationTier(verificationStatus: string): Tier {
  return verificationStatus === 'verified' ? 'verified' : 'unverified';
}

/** A ledger currency: an ISO 4217 code (XOF) or a stablecoin (USDC), as the contract's AssetCode. */
const CURRENCY_CODE = /^[A-Z][A-Z0-9]{2,9}$/;

/** The largest cap: a bigint column holds it, with room for a running counter to pass it. */
const MAX_CAP = 10n ** 18n;

export class LimitPolicyError extends Error {
  constructor(source: string, problem: string) {
    super(`limits policy ${source}: ${problem}`);
    this.name = 'LimitPolicyError';
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function minorAmount(value: unknown, where: string, fail: (problem: string) => never): bigint {
  // Whole minor units only: a string of digits or a safe integer, never a float.
  if (typeof value === 'string' && /^(0|[1-9][0-9]{0,18})$/.test(value)) {
    const amount = BigInt(value);
    if (amount <= MAX_CAP) return amount;
  } else if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) {
    return BigInt(value);
  }
  return fail(`${where} must be a whole, non-negative number of minor units (a string of digits or an integer) at most ${MAX_CAP}, got ${JSON.stringify(value)}`);
}

/** Validates a parsed policy document; throws LimitPolicyError naming the first problem. */
export function parseLimitPolicy(document: unknown, source = 'document'): LimitPolicy {
  const fail = (problem: string): never => {
    throw new LimitPolicyError(source, problem);
  };
  if (!isRecord(document)) return fail('must be a JSON object');
  const { version, currencies } = document;
  if (typeof version !== 'string' || !/^\S{1,64}$/.test(version)) fail('"version" must be a non-empty string without spaces (at most 64 characters)');
  if (!isRecord(currencies) || Object.keys(currencies).length === 0) return fail('"currencies" must be an object with at least one currency');
  const parsed = new Map<string, ReadonlyMap<Tier, TierCaps>>();
  for (const [currency, tiers] of Object.entries(currencies)) {
    if (!CURRENCY_CODE.test(currency)) fail(`currency "${currency}" is not a currency code (an ISO 4217 code such as XOF, or a stablecoin such as USDC: a capital letter, then 2 to 9 capital letters or digits)`);
    if (!isRecord(tiers)) return fail(`currencies.${currency} must be an object of tiers`);
    const extraTier = Object.keys(tiers).find((tier) => !(TIERS as readonly string[]).includes(tier));
    if (extraTier) fail(`currencies.${currency}.${extraTier} is not a tier (${TIERS.join(', ')})`);
    const byTier = new Map<Tier, TierCaps>();
    for (const tier of TIERS) {
      const caps = tiers[tier];
      if (!isRecord(caps)) return fail(`currencies.${currency}.${tier} is missing (every currency names the caps of ${TIERS.join(', ')})`);
      const extraLimit = Object.keys(caps).find((limit) => !(LIMITS as readonly string[]).includes(limit));
      if (extraLimit) fail(`currencies.${currency}.${tier}.${extraLimit} is not a limit (${LIMITS.join(', ')})`);
      const values = {} as Record<LimitName, bigint>;
      for (const limit of LIMITS) values[limit] = minorAmount(caps[limit], `currencies.${currency}.${tier}.${limit}`, fail);
      byTier.set(tier, values);
    }
    parsed.set(currency, byTier);
  }
  return { version: version as string, currencies: parsed };
}

/**
 * The policy's currencies and tiers with one cap for every limit: what a test or a benchmark
 * installs to run every check in full while no movement ever meets a cap.
 */
export function uniformPolicy(policy: LimitPolicy, cap: bigint, version: string): LimitPolicy {
  const caps = Object.fromEntries(LIMITS.map((limit) => [limit, cap])) as Record<LimitName, bigint>;
  return { version, currencies: new Map([...policy.currencies.keys()].map((currency) => [currency, new Map(TIERS.map((tier) => [tier, caps]))])) };
}

/** Reads and validates the policy file (the shipped one unless told). */
export function loadLimitPolicy(file: string = LIMIT_POLICY_FILE): LimitPolicy {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new LimitPolicyError(file, `cannot be read (${(error as Error).message})`);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new LimitPolicyError(file, `is not valid JSON (${(error as Error).message})`);
  }
  return parseLimitPolicy(document, file);
}
