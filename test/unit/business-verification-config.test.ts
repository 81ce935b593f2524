import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config';
import { productionEnv } from '../support/production-env';
import { businessVerificationProvider, SandboxVerificationProvider } from '../../src/modules/organizations';

const PRODUCTION = productionEnv('BUSINESS_VERIFICATION_PROVIDER');

describe('BUSINESS_VERIFICATION_PROVIDER: who decides an organisation’s verification', () => {
  it('is the sandbox outside production without being named', () => {
    expect(loadConfig({ NODE_ENV: 'test' }).businessVerification.provider).toBe('sandbox');
    expect(loadConfig({ NODE_ENV: 'development' }).businessVerification.provider).toBe('sandbox');
  });

  it('production refuses to start unless the provider is named, and says how', () => {
    expect(() => loadConfig(PRODUCTION)).toThrow(/BUSINESS_VERIFICATION_PROVIDER must be set in production.*-0000.*BUSINESS_VERIFICATION_PROVIDER=sandbox/);
    expect(() => loadConfig({ ...PRODUCTION, BUSINESS_VERIFICATION_PROVIDER: '' })).toThrow(/BUSINESS_VERIFICATION_PROVIDER must be set in production/);
    expect(() => loadConfig({ ...PRODUCTION, NODE_ENV: undefined })).toThrow(/BUSINESS_VERIFICATION_PROVIDER must be set in production/);
    expect(loadConfig({ ...PRODUCTION, BUSINESS_VERIFICATION_PROVIDER: 'sandbox' }).businessVerification.provider).toBe('sandbox');
  });

  it('refuses a provider that does not exist', () => {
    expect(() => loadConfig({ NODE_ENV: 'test', BUSINESS_VERIFICATION_PROVIDER: 'registry' })).toThrow(/BUSINESS_VERIFICATION_PROVIDER must be one of sandbox, got "registry"/);
    expect(() => loadConfig({ ...PRODUCTION, BUSINESS_VERIFICATION_PROVIDER: 'registry' })).toThrow(/BUSINESS_VERIFICATION_PROVIDER must be one of sandbox/);
  });

  it('the named provider is the one that decides', () => {
    const provider = businessVerificationProvider('sandbox');
    expect(provider).toBeInstanceOf(SandboxVerificationProvider);
    expect(provider.decide({ registrationNumber: 'CI-ABJ-0000', country: 'CI' })).toEqual({ status: 'verified' });
    expect(provider.decide({ registrationNumber: 'CI-ABJ-1234', country: 'CI' })).toEqual({ status: 'pending' });
  });
});
