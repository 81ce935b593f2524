import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config';
import { productionEnv } from '../support/production-env';

const PRODUCTION = productionEnv('IDENTITY_PROVIDER');

describe('IDENTITY_PROVIDER: who checks identities', () => {
  it('is the sandbox outside production without being named', () => {
    expect(loadConfig({ NODE_ENV: 'test' }).identity.provider).toBe('sandbox');
    expect(loadConfig({ NODE_ENV: 'development' }).identity.provider).toBe('sandbox');
  });

  it('production refuses to start with the sandbox unless it is named, and says how', () => {
    expect(() => loadConfig(PRODUCTION)).toThrow(/IDENTITY_PROVIDER must be set in production \(one of sandbox\).*IDENTITY_PROVIDER=sandbox/);
    expect(() => loadConfig({ ...PRODUCTION, IDENTITY_PROVIDER: '' })).toThrow(/IDENTITY_PROVIDER must be set in production/);
    expect(loadConfig({ ...PRODUCTION, IDENTITY_PROVIDER: 'sandbox' }).identity.provider).toBe('sandbox');
  });

  it('refuses a provider that does not exist, in any mode', () => {
    expect(() => loadConfig({ NODE_ENV: 'test', IDENTITY_PROVIDER: 'smile_id' })).toThrow(/IDENTITY_PROVIDER must be one of sandbox, got "smile_id"/);
    expect(() => loadConfig({ ...PRODUCTION, IDENTITY_PROVIDER: 'Sandbox' })).toThrow(/IDENTITY_PROVIDER must be one of sandbox/);
  });

  it('keeps the periods of its jobs (IDENTITY_PROCESS_INTERVAL_SECONDS, IDENTITY_EXPIRE_INTERVAL_SECONDS)', () => {
    expect(loadConfig({ NODE_ENV: 'test' }).identity).toEqual({ provider: 'sandbox', processEverySeconds: 2, expireEverySeconds: 300 });
    expect(loadConfig({ NODE_ENV: 'test', IDENTITY_PROCESS_INTERVAL_SECONDS: '5', IDENTITY_EXPIRE_INTERVAL_SECONDS: '60' }).identity).toMatchObject({ processEverySeconds: 5, expireEverySeconds: 60 });
    expect(() => loadConfig({ NODE_ENV: 'test', IDENTITY_PROCESS_INTERVAL_SECONDS: '0' })).toThrow(/IDENTITY_PROCESS_INTERVAL_SECONDS/);
  });
});
