import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config';
import { limitsView, loadLimitPolicy, parseLimitPolicy, LimitPolicyError } from '../../src/modules/limits';
import { buildServices } from '../../src/services';
import { testKnex } from '../support/database';

// By its own path, not LIMIT_POLICY_FILE: a mutant of that constant must fail a test, not the file's import.
const shipped = JSON.parse(fs.readFileSync(path.join(__dirname, '../../src/modules/limits/tier-policy.json'), 'utf8')) as { version: string; currencies: Record<string, Record<string, Record<string, unknown>>> };

function withChange(change: (doc: typeof shipped) => void): unknown {
  const doc = structuredClone(shipped);
  change(doc);
  return doc;
}

function writeTemp(text: string): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'limits-')), 'tier-policy.json');
  fs.writeFileSync(file, text);
  return file;
}

describe('the tier policy file', () => {
  it('ships XOF, EUR, USD, USDC and USDT with every tier, the XOF caps of the e-money rules, and EUR at 655.957 XOF', () => {
    const policy = loadLimitPolicy();
    expect([...policy.currencies.keys()].sort()).toEqual(['EUR', 'USD', 'USDC', 'USDT', 'XOF']);
    expect(policy.currencies.get('XOF')?.get('tier_0')).toMatchObject({ balance: 200_000n, per_transaction: 100_000n, monthly_inflow: 500_000n });
    expect(policy.currencies.get('XOF')?.get('tier_1')).toMatchObject({ balance: 2_000_000n, monthly_inflow: 10_000_000n });
    // 200,000 XOF / 655.957 = 304.898... EUR: 30,489 cents, rounded down.
    expect(policy.currencies.get('EUR')?.get('tier_0')?.balance).toBe(30_489n);
    for (const tiers of policy.currencies.values()) {
      expect(tiers.get('tier_2')?.balance).toBeGreaterThan(tiers.get('tier_1')?.balance ?? 0n);
    }
  });

  it('caps the stablecoins for tier_2 users and verified organisations at their USD caps, one stablecoin per dollar; every other tier holds none', () => {
    const policy = loadLimitPolicy();
    for (const coin of ['USDC', 'USDT']) {
      const tiers = policy.currencies.get(coin);
      for (const tier of ['tier_0', 'tier_1', 'unverified'] as const) {
        expect(tiers?.get(tier), `${coin} ${tier}`).toEqual({ balance: 0n, monthly_inflow: 0n, daily_outflow: 0n, per_transaction: 0n });
      }
      for (const tier of ['tier_2', 'verified'] as const) {
        const usd = policy.currencies.get('USD')?.get(tier);
        // USD caps are in cents (exponent 2), stablecoin caps in millionths (exponent 6).
        for (const limit of ['balance', 'monthly_inflow', 'daily_outflow', 'per_transaction'] as const) {
          expect(tiers?.get(tier)?.[limit], `${coin} ${tier} ${limit}`).toBe((usd?.[limit] ?? 0n) * 10_000n);
        }
      }
    }
    // tier_2: 16,666.66 USDC held at most, 8,333.33 USDC per movement.
    expect(policy.currencies.get('USDC')?.get('tier_2')).toMatchObject({ balance: 16_666_660_000n, per_transaction: 8_333_330_000n });
  });

  it.each([
    ['a float', (doc: typeof shipped) => void (doc.currencies.XOF!.tier_0!.balance = 200000.5), /currencies\.XOF\.tier_0\.balance must be a whole, non-negative number of minor units/],
    ['a negative cap', (doc: typeof shipped) => void (doc.currencies.EUR!.tier_1!.daily_outflow = '-1'), /currencies\.EUR\.tier_1\.daily_outflow must be/],
    ['a missing tier', (doc: typeof shipped) => void delete doc.currencies.USD!.verified, /currencies\.USD\.verified is missing/],
    ['a missing limit', (doc: typeof shipped) => void delete doc.currencies.XOF!.tier_2!.per_transaction, /currencies\.XOF\.tier_2\.per_transaction must be/],
    ['an unknown limit', (doc: typeof shipped) => void (doc.currencies.XOF!.tier_2!.weekly = '1'), /currencies\.XOF\.tier_2\.weekly is not a limit/],
    ['an unknown tier', (doc: typeof shipped) => void (doc.currencies.XOF!.tier_3 = {}), /currencies\.XOF\.tier_3 is not a tier/],
    ['a bad currency code', (doc: typeof shipped) => void (doc.currencies.xof = doc.currencies.XOF!), /currency "xof" is not a currency code/],
    ['a stablecoin code in lower case', (doc: typeof shipped) => void (doc.currencies.usdc = doc.currencies.USDC!), /currency "usdc" is not a currency code/],
    ['no version', (doc: typeof shipped) => void (doc.version = ''), /"version" must be a non-empty string/],
  ])('refuses %s, naming where', (_name, change, message) => {
    expect(() => parseLimitPolicy(withChange(change), 'tier-policy.json')).toThrow(message);
  });

  it('refuses a file that is not JSON with the file and the reason', () => {
    const file = writeTemp('{"version": "1", ');
    expect(() => loadLimitPolicy(file)).toThrow(new RegExp(`limits policy ${file}: is not valid JSON`));
  });

  it('the boot refuses a malformed file: no services are built', () => {
    const file = writeTemp(JSON.stringify(withChange((doc) => void (doc.currencies.XOF!.tier_0!.balance = 1.5))));
    const build = () => buildServices({ config: loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent' }), knex: testKnex(), logger: pino({ level: 'silent' }), limitPolicy: file });
    expect(build).toThrow(LimitPolicyError);
    expect(build).toThrow(/currencies\.XOF\.tier_0\.balance must be a whole/);
  });

  it('what remains is never below zero, even for a balance above its cap', () => {
    const policy = loadLimitPolicy();
    const view = limitsView(policy, 'tier_0', new Map([['XOF', { balanceMinor: 900_000n, monthlyInflowMinor: 0n, dailyOutflowMinor: 5n }]]), '2026-12-31');
    const xof = view.currencies.find((c) => c.currency === 'XOF');
    expect(xof?.limits[0]).toEqual({ limit: 'balance', limit_minor: '200000', used_minor: '900000', remaining_minor: '0', resets_at: null });
    expect(xof?.limits[1]?.resets_at).toBe('2027-01-01T00:00:00.000Z');
    expect(xof?.limits[2]).toMatchObject({ used_minor: '5', remaining_minor: '199995', resets_at: '2027-01-01T00:00:00.000Z' });
  });
});
