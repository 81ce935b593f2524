import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_JWT_SECRET, DEFAULT_MOBILE_MONEY_CALLBACK_SECRET, loadConfig } from '../../src/config';

describe('config', () => {
  it('has the documented defaults (in development mode)', () => {
    const config = loadConfig({ NODE_ENV: 'development' });
    expect(config.port).toBe(8080);
    expect(config.payPort).toBe(8081);
    expect(config.payUrl).toBe('http://localhost:8081');
    expect(config.databaseUrl).toBeUndefined();
    expect(config.redisUrl).toBeUndefined();
    expect(config.jwt.accessTtlSeconds).toBe(900);
    expect(config.login).toEqual({ maxFailedAttempts: 5, lockMinutes: 15, accountMaxFailedAttempts: 20, knownSourceDays: 30, maxConcurrentVerifications: 8 });
    expect(config.rateLimit.loginPerIpPerWindow).toBe(30);
    expect(config.idempotencyTtlHours).toBe(24);
    expect(config.seedDemo).toBe(true);
    expect(config.validateResponses).toBe(true);
    expect(config.escrows).toEqual({ feeBps: 100, minFeeMinor: {}, releaseIntervalMs: 30_000, releaseBatchSize: 100 });
  });

  it.each([
    [{ PORT: 'eighty' }, /PORT must be an integer/],
    [{ PORT: '70000' }, /PORT must be between 0 and 65535/],
    [{ DATABASE_URL: 'mysql://x@y/z' }, /DATABASE_URL must use postgres: or postgresql:/],
    [{ REDIS_URL: 'not a url' }, /REDIS_URL must be a URL/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL must be one of/],
    [{ JWT_SECRET: 'short' }, /JWT_SECRET must be at least 32 characters/],
    [{ NODE_ENV: 'staging' }, /NODE_ENV must be one of/],
    [{ SEED_DEMO: 'maybe' }, /SEED_DEMO must be true or false/],
    [{ IDEMPOTENCY_TTL_HOURS: '1' }, /IDEMPOTENCY_TTL_HOURS must be between 24/],
    [{ ESCROW_FEE_BPS: '10001' }, /ESCROW_FEE_BPS must be between 0 and 10000/],
    [{ ESCROW_FEE_BPS: '1.5' }, /ESCROW_FEE_BPS must be an integer/],
  ])('refuses %o with one clear line', (env, message) => {
    expect(() => loadConfig({ NODE_ENV: 'development', ...env })).toThrow(ConfigError);
    expect(() => loadConfig({ NODE_ENV: 'development', ...env })).toThrow(message);
  });

  it('never leaks credentials of a bad URL in the message', () => {
    expect(() => loadConfig({ NODE_ENV: 'development', DATABASE_URL: 'postgres://user:hunter2@db.example:99999/app' })).toThrow(ConfigError);
    try {
      loadConfig({ NODE_ENV: 'development', DATABASE_URL: 'postgres://user:hunter2@db.example:99999/app' });
    } catch (error) {
      expect((error as Error).message).not.toContain('hunter2');
    }
  });

  it('refuses the default secrets in production and never seeds there', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/JWT_SECRET must be set in production/);
    const config = loadConfig({
      NODE_ENV: 'production',
      JWT_SECRET: 'x'.repeat(40),
      PAY_SECRET: 'y'.repeat(40),
      API_KEY_PEPPER: 'z'.repeat(40),
      PII_ENCRYPTION_KEY: 'test:' + 'ab'.repeat(32),
      MOBILE_MONEY_CALLBACK_SECRET: `whsec_${'ab'.repeat(24)}`, CRYPTO_NETWORK: 'sandbox', CRYPTO_ADDRESS_SECRET: 'a'.repeat(40),
      REDIS_URL: 'redis://127.0.0.1:6379',
      DATABASE_URL: 'postgres://db.example/app',
      NOTIFIER: 'sandbox', IDENTITY_PROVIDER: 'sandbox', BUSINESS_VERIFICATION_PROVIDER: 'sandbox',
      SEED_DEMO: 'true',
    });
    expect(config.seedDemo).toBe(false);
    expect(config.validateResponses).toBe(false);
    expect(config.jwt.secret).not.toBe(DEFAULT_JWT_SECRET);
  });

  it('takes MOBILE_MONEY_CALLBACK_SECRET as a Standard Webhooks secret only', () => {
    expect(loadConfig({ NODE_ENV: 'test' }).mobileMoneyCallbackSecret).toBe(DEFAULT_MOBILE_MONEY_CALLBACK_SECRET);
    expect(() => loadConfig({ NODE_ENV: 'test', MOBILE_MONEY_CALLBACK_SECRET: 'x'.repeat(40) })).toThrow(/MOBILE_MONEY_CALLBACK_SECRET must be a Standard Webhooks secret/);
    expect(() => loadConfig({ NODE_ENV: 'test', MOBILE_MONEY_CALLBACK_SECRET: `whsec_${'ab'.repeat(10)}===` })).toThrow(/MOBILE_MONEY_CALLBACK_SECRET must be/);
  });

  describe('the mode: unset NODE_ENV is production, the safe side', () => {
    const SECRETS = { JWT_SECRET: 'x'.repeat(40), PAY_SECRET: 'y'.repeat(40), API_KEY_PEPPER: 'z'.repeat(40), PII_ENCRYPTION_KEY: 'test:' + 'ab'.repeat(32), MOBILE_MONEY_CALLBACK_SECRET: `whsec_${'ab'.repeat(24)}`, CRYPTO_NETWORK: 'sandbox', CRYPTO_ADDRESS_SECRET: 'a'.repeat(40), SINGLE_INSTANCE: 'true', DATABASE_URL: 'postgres://db.example/app', NOTIFIER: 'sandbox', IDENTITY_PROVIDER: 'sandbox', BUSINESS_VERIFICATION_PROVIDER: 'sandbox' };

    it('an unset or empty NODE_ENV refuses the default JWT_SECRET and PAY_SECRET', () => {
      for (const nodeEnv of [{}, { NODE_ENV: '' }]) {
        expect(() => loadConfig({ ...nodeEnv, ...SECRETS, JWT_SECRET: undefined })).toThrow(/JWT_SECRET must be set in production/);
        expect(() => loadConfig({ ...nodeEnv, ...SECRETS, JWT_SECRET: DEFAULT_JWT_SECRET })).toThrow(/JWT_SECRET must be set in production/);
        expect(() => loadConfig({ ...nodeEnv, ...SECRETS, PAY_SECRET: undefined })).toThrow(/PAY_SECRET must be set in production/);
        expect(() => loadConfig({ ...nodeEnv, ...SECRETS, MOBILE_MONEY_CALLBACK_SECRET: undefined })).toThrow(/MOBILE_MONEY_CALLBACK_SECRET must be set in production/);
        expect(() => loadConfig({ ...nodeEnv, ...SECRETS, MOBILE_MONEY_CALLBACK_SECRET: DEFAULT_MOBILE_MONEY_CALLBACK_SECRET })).toThrow(/MOBILE_MONEY_CALLBACK_SECRET must be set in production/);
      }
    });

    it('production refuses private webhook targets by default and refuses WEBHOOK_ALLOW_PRIVATE_TARGETS=true', () => {
      expect(loadConfig({ ...SECRETS }).webhooks.allowPrivateTargets).toBe(false);
      expect(loadConfig({ ...SECRETS, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' }).webhooks.allowPrivateTargets).toBe(false);
      expect(() => loadConfig({ ...SECRETS, NODE_ENV: 'production', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' })).toThrow(/WEBHOOK_ALLOW_PRIVATE_TARGETS=true is refused in production/);
      expect(loadConfig({ NODE_ENV: 'development' }).webhooks.allowPrivateTargets).toBe(true);
    });

    it('an unset NODE_ENV never seeds, skips response validation and reports production', () => {
      const config = loadConfig({ ...SECRETS, SEED_DEMO: 'true' });
      expect(config.nodeEnv).toBe('production');
      expect(config.seedDemo).toBe(false);
      expect(config.validateResponses).toBe(false);
    });

    it('production (said or by default) refuses the embedded database, naming the way out', () => {
      for (const env of [{ ...SECRETS, DATABASE_URL: undefined }, { ...SECRETS, NODE_ENV: 'production', DATABASE_URL: '' }]) {
        expect(() => loadConfig(env)).toThrow(ConfigError);
        expect(() => loadConfig(env)).toThrow(/DATABASE_URL must be set in production.*NODE_ENV=development/);
      }
    });

    it('development and test accept the defaults and use the embedded database', () => {
      for (const nodeEnv of ['development', 'test']) {
        const config = loadConfig({ NODE_ENV: nodeEnv });
        expect(config.jwt.secret).toBe(DEFAULT_JWT_SECRET);
        expect(config.databaseUrl).toBeUndefined();
      }
    });

    it('only development seeds the demo data (test mode, and any other, never does, even with SEED_DEMO=true)', () => {
      expect(loadConfig({ NODE_ENV: 'development' }).seedDemo).toBe(true);
      expect(loadConfig({ NODE_ENV: 'development', SEED_DEMO: 'false' }).seedDemo).toBe(false);
      expect(loadConfig({ NODE_ENV: 'test' }).seedDemo).toBe(false);
      expect(loadConfig({ NODE_ENV: 'test', SEED_DEMO: 'true' }).seedDemo).toBe(false);
    });
  });
});
