import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_JWT_SECRET, loadConfig } from '../../src/config';

describe('config', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config.port).toBe(8080);
    expect(config.payPort).toBe(8081);
    expect(config.payUrl).toBe('http://localhost:8081');
    expect(config.databaseUrl).toBeUndefined();
    expect(config.redisUrl).toBeUndefined();
    expect(config.jwt.accessTtlSeconds).toBe(900);
    expect(config.login).toEqual({ maxFailedAttempts: 5, lockMinutes: 15 });
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
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('never leaks credentials of a bad URL in the message', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://user:hunter2@db.example:99999/app' })).toThrow(ConfigError);
    try {
      loadConfig({ DATABASE_URL: 'postgres://user:hunter2@db.example:99999/app' });
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
      REDIS_URL: 'redis://127.0.0.1:6379',
      SEED_DEMO: 'true',
    });
    expect(config.seedDemo).toBe(false);
    expect(config.validateResponses).toBe(false);
    expect(config.jwt.secret).not.toBe(DEFAULT_JWT_SECRET);
  });
});
