import { LIMITS, nextTierOf, type LimitName, type LimitPolicy, type NextTier, type Tier } from './limit-policy';

/** What an owner has used in one currency (minor units): its balance, this month's inflow, today's outflow. */
export interface CurrencyUsage {
  balanceMinor: bigint;
  monthlyInflowMinor: bigint;
  dailyOutflowMinor: bigint;
}

export interface LimitUsageView {
  limit: LimitName;
  limit_minor: string;
  used_minor: string;
  remaining_minor: string;
  resets_at: string | null;
}

export interface LimitsView {
  object: 'limits';
  tier: Tier;
  next_tier: NextTier | null;
  policy_version: string;
  currencies: Array<{ currency: string; limits: LimitUsageView[] }>;
}

/** When the usage periods start again: tomorrow and the first of next month, at 00:00 UTC. */
export function periodEnds(today: string): { day: Date; month: Date } {
  const [year, month, day] = today.split('-').map(Number) as [number, number, number];
  return { day: new Date(Date.UTC(year, month - 1, day + 1)), month: new Date(Date.UTC(year, month, 1)) };
}

/**
 * The limits of `tier` in each currency of the policy, with what `usage` used of them (a
 * currency without usage has used nothing). A per-transaction cap has no usage: it bounds
 * each movement. What remains is never below zero (a balance may stand above its cap).
 */
export function limitsView(policy: LimitPolicy, tier: Tier, usage: ReadonlyMap<string, CurrencyUsage>, today: string): LimitsView {
  const ends = periodEnds(today);
  const currencies = [...policy.currencies.keys()].sort().map((currency) => {
    const caps = policy.currencies.get(currency)?.get(tier);
    if (!caps) throw new Error(`the limits policy has no ${tier} caps in ${currency}`);
    const used = usage.get(currency) ?? { balanceMinor: 0n, monthlyInflowMinor: 0n, dailyOutflowMinor: 0n };
    const usedOf: Record<LimitName, bigint> = {
      balance: used.balanceMinor,
      monthly_inflow: used.monthlyInflowMinor,
      daily_outflow: used.dailyOutflowMinor,
      per_transaction: 0n,
    };
    const resets: Record<LimitName, Date | null> = { balance: null, monthly_inflow: ends.month, daily_outflow: ends.day, per_transaction: null };
    return {
      currency,
      limits: LIMITS.map((limit) => {
        const usedMinor = usedOf[limit] < 0n ? 0n : usedOf[limit];
        const remaining = caps[limit] - usedMinor;
        return {
          limit,
          limit_minor: caps[limit].toString(),
          used_minor: usedMinor.toString(),
          remaining_minor: (remaining > 0n ? remaining : 0n).toString(),
          resets_at: resets[limit]?.toISOString() ?? null,
        };
      }),
    };
  });
  return { object: 'limits', tier, next_tier: nextTierOf(tier), policy_version: policy.version, currencies };
}
