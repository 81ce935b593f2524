import type { Knex } from 'knex';
import { withTransaction } from '../../db/transaction';
import { NotFoundError } from '../../errors';
import { LIMITS, organizationTier, type LimitPolicy, type Tier } from './limit-policy';
import { limitsView, type CurrencyUsage, type LimitsView } from './limit-usage';

const COLUMNS: Record<(typeof LIMITS)[number], string> = {
  balance: 'balance_minor',
  monthly_inflow: 'monthly_inflow_minor',
  daily_outflow: 'daily_outflow_minor',
  per_transaction: 'per_transaction_minor',
};

/**
 * The tier limits: the policy loaded at boot, written to `limit_policies` (what ledger_post
 * enforces under its account locks), and each owner's limits with their usage.
 */
export class LimitsService {
  constructor(private readonly deps: { knex: Knex; policy: LimitPolicy }) {}

  get policy(): LimitPolicy {
    return this.deps.policy;
  }

  /**
   * Makes `limit_policies` hold exactly the policy (its rows upserted, any other deleted), in one
   * transaction serialised between instances starting together.
   */
  async install(): Promise<void> {
    const { policy } = this.deps;
    const rows = [...policy.currencies].flatMap(([currency, tiers]) =>
      [...tiers].map(([tier, caps]) => ({
        currency,
        tier,
        version: policy.version,
        ...Object.fromEntries(LIMITS.map((limit) => [COLUMNS[limit], caps[limit].toString()])),
      })),
    );
    await withTransaction(this.deps.knex, async (trx) => {
      await trx.raw("SELECT pg_advisory_xact_lock(hashtextextended('limit_policies', 0))");
      await trx.raw('DELETE FROM limit_policies WHERE (currency, tier) NOT IN (SELECT * FROM unnest(?::text[], ?::text[]))', [
        rows.map((row) => row.currency),
        rows.map((row) => row.tier),
      ]);
      await trx('limit_policies')
        .insert(rows.map((row) => ({ ...row, updated_at: trx.fn.now() })))
        .onConflict(['currency', 'tier'])
        .merge();
    });
  }

  async ofUser(userId: string): Promise<LimitsView> {
    const user = (await this.deps.knex('users').where({ id: userId }).first('tier')) as { tier: Tier } | undefined;
    if (!user) throw new NotFoundError('Your user account no longer exists.', 'NotFound');
    return this.view(user.tier, 'user', userId, 'wallet');
  }

  async ofOrganization(organizationId: string): Promise<LimitsView> {
    const org = (await this.deps.knex('organizations').where({ id: organizationId }).first('verification_status')) as { verification_status: string } | undefined;
    if (!org) throw new NotFoundError('Organization not found.', 'NotFound');
    return this.view(organizationTier(org.verification_status), 'organization', organizationId, 'org_account');
  }

  /** The owner's usage per currency, read with the database's clock (the one ledger_post counts by). */
  private async view(tier: Tier, ownerType: 'user' | 'organization', ownerId: string, kind: 'wallet' | 'org_account'): Promise<LimitsView> {
    const result = (await this.deps.knex.raw(
      `WITH p AS (SELECT (now() AT TIME ZONE 'UTC')::date AS today, date_trunc('month', now() AT TIME ZONE 'UTC')::date AS month)
       SELECT p.today::text AS today, a.currency::text AS currency,
              sum(a.balance_minor)::text AS balance,
              sum(CASE WHEN a.inflow_month = p.month THEN a.inflow_month_minor ELSE 0 END)::text AS inflow,
              sum(CASE WHEN a.outflow_day = p.today THEN a.outflow_day_minor ELSE 0 END)::text AS outflow
         FROM p LEFT JOIN ledger_accounts a ON a.owner_type = ? AND a.owner_id = ? AND a.kind = ?
        GROUP BY p.today, a.currency`,
      [ownerType, ownerId, kind],
    )) as { rows: Array<{ today: string; currency: string | null; balance: string | null; inflow: string | null; outflow: string | null }> };
    const usage = new Map<string, CurrencyUsage>();
    for (const row of result.rows) {
      if (row.currency === null) continue;
      usage.set(row.currency, { balanceMinor: BigInt(row.balance ?? '0'), monthlyInflowMinor: BigInt(row.inflow ?? '0'), dailyOutflowMinor: BigInt(row.outflow ?? '0') });
    }
    const today = (result.rows[0] as { today: string }).today;
    return limitsView(this.deps.policy, tier, usage, today);
  }
}
