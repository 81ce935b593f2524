import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/errors';
import {
  asOwnLimit,
  limitDetailOf,
  limitExceeded,
  limitRefusal,
  limitsView,
  loadLimitPolicy,
  nextTierOf,
  organizationTier,
  parseLimitPolicy,
  recipientCannotReceive,
  uniformPolicy,
  LimitPolicyError,
  LIMIT_POLICY_FILE,
  type LimitRefusalDetail,
} from '../../src/modules/limits';

// Read by its own path, not LIMIT_POLICY_FILE, and parsed only inside the tests: a mutant that
// broke either at the file's import would stop the file from loading, and Stryker counts a
// file that never ran as a survivor.
const SHIPPED_POLICY = path.join(__dirname, '../../src/modules/limits/tier-policy.json');
const shipped = JSON.parse(fs.readFileSync(SHIPPED_POLICY, 'utf8')) as { version: string; currencies: Record<string, Record<string, Record<string, unknown>>> };

function withChange(change: (doc: typeof shipped) => void): unknown {
  const doc = structuredClone(shipped);
  change(doc);
  return doc;
}

const payer: LimitRefusalDetail = {
  account_id: 'acc-1',
  owner_id: 'user-1',
  owner_type: 'user',
  currency: 'XOF',
  direction: 'out',
  limit: 'daily_outflow',
  limit_minor: '200000',
  remaining_minor: '1500',
  tier: 'tier_0',
};
const payee: LimitRefusalDetail = { ...payer, owner_id: 'user-2', direction: 'in', limit: 'monthly_inflow', limit_minor: '500000', remaining_minor: '0' };

describe('a limit refusal: the payer learns its limit, nobody learns the payee’s', () => {
  it('the payer’s own limit: 409 LimitExceeded with the limit, what remains, the tier and what lifts it', () => {
    const error = limitRefusal(payer);
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({ code: 'LimitExceeded', category: 'conflict', message: 'This operation would exceed your daily outflow limit in XOF (tier tier_0).' });
    expect(error.details).toEqual({
      limit: 'daily_outflow',
      currency: 'XOF',
      limit_minor: '200000',
      remaining_minor: '1500',
      tier: 'tier_0',
      next_tier: { tier: 'tier_1', requires: 'identity_verification' },
    });
    expect(limitDetailOf(error)).toEqual(payer);
  });

  it('the payee’s limit: 409 RecipientCannotReceive, no details, the detail kept for the payee itself', () => {
    const error = limitRefusal(payee);
    expect(error).toMatchObject({ code: 'RecipientCannotReceive', category: 'conflict', message: 'The recipient cannot receive this amount at the moment.' });
    expect(error.details).toBeUndefined();
    expect(limitDetailOf(error)).toEqual(payee);
    expect(limitDetailOf(recipientCannotReceive())).toBeUndefined();
  });

  it('told to the owner whose limit it is, a payee refusal becomes that owner’s own LimitExceeded; to anyone else it stays as it was', () => {
    const error = limitRefusal(payee);
    const own = asOwnLimit(error, 'user-2') as DomainError;
    expect(own).toMatchObject({ code: 'LimitExceeded', message: 'This operation would exceed your monthly inflow limit in XOF (tier tier_0).' });
    expect(own.details).toMatchObject({ limit: 'monthly_inflow', remaining_minor: '0' });
    expect(asOwnLimit(error, 'user-1')).toBe(error);
    const other = new DomainError('Other', 'conflict', 'not a limit');
    expect(asOwnLimit(other, 'user-2')).toBe(other);
    const notDomain = new Error('plain');
    expect(asOwnLimit(notDomain, 'user-2')).toBe(notDomain);
    // Anything can be thrown, even nothing: it is passed on as it was.
    expect(asOwnLimit(undefined, 'user-2')).toBeUndefined();
    expect(asOwnLimit(null, 'user-2')).toBeNull();
    expect(limitDetailOf(notDomain)).toBeUndefined();
    expect(limitDetailOf(other)).toBeUndefined();
  });

  it('an organisation’s refusal names its next tier; the top tiers name none', () => {
    expect(limitExceeded({ ...payer, tier: 'unverified' }).details).toMatchObject({ tier: 'unverified', next_tier: { tier: 'verified', requires: 'business_verification' } });
    expect(limitExceeded({ ...payer, tier: 'tier_1' }).details).toMatchObject({ next_tier: { tier: 'tier_2', requires: 'identity_documents' } });
    expect(limitExceeded({ ...payer, tier: 'tier_2' }).details).toMatchObject({ next_tier: null });
    expect(limitExceeded({ ...payer, tier: 'verified' }).details).toMatchObject({ next_tier: null });
  });

  it.each([
    ['null', null],
    ['a string', 'LimitExceeded'],
    ['no direction', { ...payer, direction: undefined }],
    ['another direction', { ...payer, direction: 'sideways' }],
    ['an unknown limit', { ...payer, limit: 'weekly' }],
    ['an unknown tier', { ...payer, tier: 'tier_9' }],
    ['no currency', { ...payer, currency: undefined }],
    ['a limit that is not digits', { ...payer, limit_minor: '12.5' }],
    ['a limit with digits and more', { ...payer, limit_minor: 'x12' }],
    ['a limit ending in more', { ...payer, limit_minor: '12x' }],
    ['a remainder that is not digits', { ...payer, remaining_minor: '-1' }],
    ['a remainder with digits first', { ...payer, remaining_minor: '1-' }],
    ['nothing at all', undefined],
  ])('an unreadable detail (%s) is a programming error, not a refusal', (_name, detail) => {
    expect(() => limitRefusal(detail)).toThrow(new TypeError(`ledger_post answered LimitExceeded with an unreadable detail: ${JSON.stringify(detail)}`));
  });

  it('reads every limit, tier and direction the policy has', () => {
    for (const limit of ['balance', 'monthly_inflow', 'daily_outflow', 'per_transaction'] as const) {
      for (const tier of ['tier_0', 'tier_1', 'tier_2', 'unverified', 'verified'] as const) {
        expect(limitRefusal({ ...payer, limit, tier }).code).toBe('LimitExceeded');
        expect(limitRefusal({ ...payer, limit, tier, direction: 'in' }).code).toBe('RecipientCannotReceive');
      }
    }
  });
});

describe('the tiers', () => {
  it('an organisation is verified only when its status says so', () => {
    expect(organizationTier('verified')).toBe('verified');
    for (const status of ['pending', 'rejected', 'unverified', 'Verified', '']) expect(organizationTier(status)).toBe('unverified');
  });

  it('what each tier needs to go up', () => {
    expect(nextTierOf('tier_0')).toEqual({ tier: 'tier_1', requires: 'identity_verification' });
    expect(nextTierOf('tier_1')).toEqual({ tier: 'tier_2', requires: 'identity_documents' });
    expect(nextTierOf('tier_2')).toBeNull();
    expect(nextTierOf('unverified')).toEqual({ tier: 'verified', requires: 'business_verification' });
    expect(nextTierOf('verified')).toBeNull();
  });
});

describe('the policy document', () => {
  const parse = (change: (doc: typeof shipped) => void) => () => parseLimitPolicy(withChange(change), 'tier-policy.json');

  it('reads caps as strings of digits up to 10^18, or safe non-negative integers', () => {
    const policy = parseLimitPolicy(
      withChange((doc) => {
        doc.currencies.XOF!.tier_0!.balance = '1000000000000000000';
        doc.currencies.XOF!.tier_0!.monthly_inflow = '0';
        doc.currencies.XOF!.tier_0!.daily_outflow = 0;
        doc.currencies.XOF!.tier_0!.per_transaction = 9_007_199_254_740_991;
      }),
    );
    expect(policy.version).toBe(shipped.version);
    expect(policy.currencies.get('XOF')?.get('tier_0')).toEqual({ balance: 10n ** 18n, monthly_inflow: 0n, daily_outflow: 0n, per_transaction: 9_007_199_254_740_991n });
    expect(policy.currencies.get('USD')?.get('verified')?.balance).toBe(BigInt(shipped.currencies.USD!.verified!.balance as string));
  });

  it.each([
    ['above 10^18', '1000000000000000001'],
    ['twenty digits', '10000000000000000000'],
    ['a leading zero', '0100'],
    ['a sign', '+100'],
    ['a trailing space', '100 '],
    ['a leading space', ' 100'],
    ['a negative integer', -1],
    ['an unsafe integer', 9_007_199_254_740_992],
    ['a boolean', true],
  ])('refuses a cap that is %s, quoting it', (_name, value) => {
    expect(parse((doc) => void (doc.currencies.XOF!.tier_1!.balance = value))).toThrow(
      `limits policy tier-policy.json: currencies.XOF.tier_1.balance must be a whole, non-negative number of minor units (a string of digits or an integer) at most 1000000000000000000, got ${JSON.stringify(value)}`,
    );
  });

  it('refuses a document, currencies, tiers or caps that are not objects, and an empty policy', () => {
    expect(() => parseLimitPolicy([], 'p.json')).toThrow('limits policy p.json: must be a JSON object');
    expect(() => parseLimitPolicy(null)).toThrow('limits policy document: must be a JSON object');
    expect(() => parseLimitPolicy('policy')).toThrow('limits policy document: must be a JSON object');
    expect(parse((doc) => void (doc.currencies = {}))).toThrow('limits policy tier-policy.json: "currencies" must be an object with at least one currency');
    expect(parse((doc) => void ((doc as { currencies: unknown }).currencies = ['XOF']))).toThrow('"currencies" must be an object with at least one currency');
    expect(parse((doc) => void ((doc.currencies as Record<string, unknown>).XOF = 'caps'))).toThrow('limits policy tier-policy.json: currencies.XOF must be an object of tiers');
    expect(parse((doc) => void ((doc.currencies.XOF as Record<string, unknown>).tier_1 = ['1']))).toThrow(
      'limits policy tier-policy.json: currencies.XOF.tier_1 is missing (every currency names the caps of tier_0, tier_1, tier_2, unverified, verified)',
    );
    expect(parse((doc) => void (doc.currencies.XOF!.tier_1!.weekly = '1'))).toThrow(
      'limits policy tier-policy.json: currencies.XOF.tier_1.weekly is not a limit (balance, monthly_inflow, daily_outflow, per_transaction)',
    );
    expect(parse((doc) => void (doc.currencies.XOF!.tier_9 = {}))).toThrow('limits policy tier-policy.json: currencies.XOF.tier_9 is not a tier (tier_0, tier_1, tier_2, unverified, verified)');
  });

  it('a version is 1 to 64 characters without spaces', () => {
    expect(parseLimitPolicy(withChange((doc) => void (doc.version = 'v'.repeat(64)))).version).toBe('v'.repeat(64));
    for (const version of ['v'.repeat(65), '2026 1', ' 2026', '2026 ', 1]) {
      expect(parse((doc) => void ((doc as { version: unknown }).version = version))).toThrow(
        'limits policy tier-policy.json: "version" must be a non-empty string without spaces (at most 64 characters)',
      );
    }
  });

  it('a currency is a capital letter, then 2 to 9 capital letters or digits (ISO 4217, or a stablecoin)', () => {
    for (const code of ['XO', 'xof', 'Xof', '0XF', 'X-F', 'ABCDEFGHIJK']) {
      expect(parse((doc) => void (doc.currencies[code] = doc.currencies.XOF!))).toThrow(
        `limits policy tier-policy.json: currency "${code}" is not a currency code (an ISO 4217 code such as XOF, or a stablecoin such as USDC: a capital letter, then 2 to 9 capital letters or digits)`,
      );
    }
    for (const code of ['XOFF', 'X0F', 'ABCDEFGHIJ']) {
      expect([...parseLimitPolicy(withChange((doc) => void (doc.currencies[code] = doc.currencies.XOF!))).currencies.keys()]).toContain(code);
    }
  });

  it('the shipped file is the one read when none is named', () => {
    expect(LIMIT_POLICY_FILE).toBe(SHIPPED_POLICY);
    expect(loadLimitPolicy()).toEqual(parseLimitPolicy(shipped));
    expect(loadLimitPolicy(SHIPPED_POLICY).version).toBe(shipped.version);
  });

  it('a refused policy is a LimitPolicyError, named so in the log line', () => {
    const error = (() => {
      try {
        parseLimitPolicy(null, 'p.json');
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(LimitPolicyError);
    expect(error).toMatchObject({ name: 'LimitPolicyError', message: 'limits policy p.json: must be a JSON object' });
    expect(String(error)).toBe('LimitPolicyError: limits policy p.json: must be a JSON object');
  });

  it('a file that cannot be read is named with the reason', () => {
    const missing = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'limits-')), 'absent.json');
    expect(() => loadLimitPolicy(missing)).toThrow(new RegExp(`^limits policy ${missing}: cannot be read \\(ENOENT`));
  });

  it('a uniform policy has the same currencies, every tier, one cap for every limit, and its own version', () => {
    const policy = uniformPolicy(loadLimitPolicy(), 7n, 'bench');
    expect(policy.version).toBe('bench');
    expect([...policy.currencies.keys()].sort()).toEqual(['EUR', 'USD', 'USDC', 'USDT', 'XOF']);
    for (const tiers of policy.currencies.values()) {
      expect([...tiers.keys()]).toEqual(['tier_0', 'tier_1', 'tier_2', 'unverified', 'verified']);
      for (const caps of tiers.values()) expect(caps).toEqual({ balance: 7n, monthly_inflow: 7n, daily_outflow: 7n, per_transaction: 7n });
    }
  });
});

describe('the limits view', () => {
  const policy = () => parseLimitPolicy(shipped);

  it('every currency in order, every limit, the tier, its next tier and the policy version; nothing used when nothing is known', () => {
    const view = limitsView(policy(), 'tier_1', new Map(), '2026-02-28');
    expect(view).toMatchObject({ object: 'limits', tier: 'tier_1', next_tier: { tier: 'tier_2', requires: 'identity_documents' }, policy_version: shipped.version });
    expect(view.currencies.map((c) => c.currency)).toEqual(['EUR', 'USD', 'USDC', 'USDT', 'XOF']);
    expect(view.currencies.find((c) => c.currency === 'XOF')?.limits).toEqual([
      { limit: 'balance', limit_minor: '2000000', used_minor: '0', remaining_minor: '2000000', resets_at: null },
      { limit: 'monthly_inflow', limit_minor: '10000000', used_minor: '0', remaining_minor: '10000000', resets_at: '2026-03-01T00:00:00.000Z' },
      { limit: 'daily_outflow', limit_minor: '2000000', used_minor: '0', remaining_minor: '2000000', resets_at: '2026-03-01T00:00:00.000Z' },
      { limit: 'per_transaction', limit_minor: '1000000', used_minor: '0', remaining_minor: '1000000', resets_at: null },
    ]);
  });

  it('used is what the usage says (a negative balance uses nothing); the daily period ends tomorrow, the monthly one next month', () => {
    const view = limitsView(policy(), 'tier_0', new Map([['XOF', { balanceMinor: -50n, monthlyInflowMinor: 500_000n, dailyOutflowMinor: 199_999n }]]), '2026-06-15');
    expect(view.currencies.find((c) => c.currency === 'XOF')?.limits).toEqual([
      { limit: 'balance', limit_minor: '200000', used_minor: '0', remaining_minor: '200000', resets_at: null },
      { limit: 'monthly_inflow', limit_minor: '500000', used_minor: '500000', remaining_minor: '0', resets_at: '2026-07-01T00:00:00.000Z' },
      { limit: 'daily_outflow', limit_minor: '200000', used_minor: '199999', remaining_minor: '1', resets_at: '2026-06-16T00:00:00.000Z' },
      { limit: 'per_transaction', limit_minor: '100000', used_minor: '0', remaining_minor: '100000', resets_at: null },
    ]);
  });

  it('a policy without the tier’s caps in a currency is a programming error naming both', () => {
    const partial = { version: 'p', currencies: new Map([['XOF', new Map()]]) };
    expect(() => limitsView(partial, 'tier_0', new Map(), '2026-06-15')).toThrow('the limits policy has no tier_0 caps in XOF');
  });
});
