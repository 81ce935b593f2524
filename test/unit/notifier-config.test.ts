import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config';
import { productionEnv } from '../support/production-env';

const PRODUCTION = productionEnv('NOTIFIER');

describe('NOTIFIER: the adapter SMS and e-mail go through', () => {
  it('is the sandbox outside production without being named', () => {
    expect(loadConfig({ NODE_ENV: 'test' }).notifications.notifier).toBe('sandbox');
    expect(loadConfig({ NODE_ENV: 'development' }).notifications.notifier).toBe('sandbox');
  });

  it('production refuses to start with the sandbox unless it is named, and says how', () => {
    expect(() => loadConfig({ ...PRODUCTION, IDENTITY_PROVIDER: 'sandbox' })).toThrow(/NOTIFIER must be set in production.*NOTIFIER=sandbox/);
    expect(() => loadConfig({ ...PRODUCTION, IDENTITY_PROVIDER: 'sandbox', NOTIFIER: '' })).toThrow(/NOTIFIER must be set in production/);
    expect(loadConfig({ ...PRODUCTION, IDENTITY_PROVIDER: 'sandbox', NOTIFIER: 'sandbox' }).notifications.notifier).toBe('sandbox');
  });

  it('refuses an adapter that does not exist', () => {
    expect(() => loadConfig({ NODE_ENV: 'test', NOTIFIER: 'twilio' })).toThrow(/NOTIFIER must be one of sandbox/);
  });

  it('keeps outbox messages OUTBOX_RETENTION_HOURS, 72 by default', () => {
    expect(loadConfig({ NODE_ENV: 'test' }).notifications.outboxRetentionHours).toBe(72);
    expect(loadConfig({ NODE_ENV: 'test', OUTBOX_RETENTION_HOURS: '1' }).notifications.outboxRetentionHours).toBe(1);
    expect(() => loadConfig({ NODE_ENV: 'test', OUTBOX_RETENTION_HOURS: '0' })).toThrow(/OUTBOX_RETENTION_HOURS/);
  });
});
