import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config';
import { productionEnv } from '../support/production-env';

const PRODUCTION = productionEnv('SINGLE_INSTANCE');

describe('instances and the shared rate-limit store', () => {
  it('refuses a production start without REDIS_URL, naming the way out', () => {
    expect(() => loadConfig(PRODUCTION)).toThrow(ConfigError);
    expect(() => loadConfig(PRODUCTION)).toThrow(/REDIS_URL must be set in production.*SINGLE_INSTANCE=true/);
  });

  it('starts in production with REDIS_URL, or without it when SINGLE_INSTANCE=true says one instance runs', () => {
    expect(loadConfig({ ...PRODUCTION, REDIS_URL: 'redis://127.0.0.1:6379' })).toMatchObject({ redisUrl: 'redis://127.0.0.1:6379', singleInstance: false });
    expect(loadConfig({ ...PRODUCTION, SINGLE_INSTANCE: 'true' })).toMatchObject({ redisUrl: undefined, singleInstance: true });
    expect(() => loadConfig({ ...PRODUCTION, SINGLE_INSTANCE: 'maybe' })).toThrow(/SINGLE_INSTANCE must be true or false/);
  });

  it('needs no Redis in development and tests', () => {
    expect(loadConfig({ NODE_ENV: 'development' }).redisUrl).toBeUndefined();
    expect(loadConfig({ NODE_ENV: 'test' }).redisUrl).toBeUndefined();
  });
});
