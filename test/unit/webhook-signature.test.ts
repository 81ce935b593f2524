import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { failingTooLong, generateSecret, nextStep, parseRetryAfter, sign, signatureHeader } from '../../src/modules/events';

const DELAYS = [0, 5, 300, 1800];
const failure = { outcome: 'failed' as const, httpStatus: 500, error: 'HTTP 500', durationMs: 3 };

describe('Standard Webhooks signatures, checked by the standardwebhooks package', () => {
  const body = JSON.stringify({ id: 'evt_00000000000000000000000000000001', type: 'invoice.paid' });
  const id = 'evt_00000000000000000000000000000001';

  it('a new secret is whsec_ and 24 random bytes in base64, each one different', () => {
    const secret = generateSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(24);
    expect(generateSecret()).not.toBe(secret);
  });

  it('verifies with the secret, and fails with another secret, another body or another id', () => {
    const secret = generateSecret();
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': sign(secret, id, timestamp, body) };
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(generateSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(secret).verify(body.replace('paid', 'void'), headers)).toThrow();
    expect(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'evt_other' })).toThrow();
  });

  it('during a rotation both secrets verify the same header', () => {
    const current = generateSecret();
    const previous = generateSecret();
    const timestamp = Math.floor(Date.now() / 1000);
    const header = signatureHeader([current, previous], id, timestamp, body);
    expect(header.split(' ')).toHaveLength(2);
    const headers = { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': header };
    expect(() => new Webhook(current).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(previous).verify(body, headers)).not.toThrow();
  });

  it('refuses a secret without its prefix', () => {
    expect(() => sign('abc', id, 1, body)).toThrow(/whsec_/);
  });
});

describe('the retry schedule', () => {
  it('a 2xx ends it', () => {
    expect(nextStep({ ...failure, outcome: 'succeeded', httpStatus: 200, error: null }, 1, DELAYS, 0)).toEqual({ status: 'succeeded' });
  });

  it('each failure waits the next delay (with up to 10 % jitter), then the delivery is exhausted', () => {
    expect(nextStep(failure, 1, DELAYS, 0)).toEqual({ status: 'failed', retryInMs: 5_000 });
    expect(nextStep(failure, 2, DELAYS, 0)).toEqual({ status: 'failed', retryInMs: 300_000 });
    expect(nextStep(failure, 2, DELAYS, 0.999)).toEqual({ status: 'failed', retryInMs: 329_970 });
    expect(nextStep(failure, 3, DELAYS, 0)).toEqual({ status: 'failed', retryInMs: 1_800_000 });
    expect(nextStep(failure, 4, DELAYS, 0)).toEqual({ status: 'exhausted' });
  });

  it('a Retry-After is honoured, never beyond the next scheduled delay', () => {
    expect(nextStep({ ...failure, httpStatus: 503, retryAfterSeconds: 60 }, 2, DELAYS, 0)).toEqual({ status: 'failed', retryInMs: 60_000 });
    expect(nextStep({ ...failure, httpStatus: 429, retryAfterSeconds: 9_999 }, 2, DELAYS, 0)).toEqual({ status: 'failed', retryInMs: 300_000 });
  });

  it('a 410 schedules nothing more', () => {
    expect(nextStep({ ...failure, outcome: 'gone', httpStatus: 410 }, 1, DELAYS, 0)).toEqual({ status: 'failed', retryInMs: null });
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = new Date('2026-11-24T10:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120);
    expect(parseRetryAfter('Tue, 24 Nov 2026 10:01:00 GMT', now)).toBe(60);
    expect(parseRetryAfter('Tue, 24 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });

  it('reads Retry-After around spaces, rounds a date up to the whole second, and ignores a blank one', () => {
    const now = new Date('2026-11-24T10:00:00.500Z');
    expect(parseRetryAfter(' 120 ', now)).toBe(120);
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter('Tue, 24 Nov 2026 10:00:02 GMT', now)).toBe(2);
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter('   ', now)).toBeUndefined();
    expect(parseRetryAfter('12 seconds', now)).toBeUndefined();
    expect(parseRetryAfter('x120', now)).toBeUndefined();
    expect(parseRetryAfter('\t30\n', now)).toBe(30);
    expect(nextStep({ ...failure, httpStatus: 503, retryAfterSeconds: 0 }, 1, DELAYS, 0.5)).toEqual({ status: 'failed', retryInMs: 0 });
  });

  it('an endpoint is failing too long once its failures span the whole window', () => {
    const since = new Date('2026-11-20T00:00:00Z');
    expect(failingTooLong(since, new Date('2026-11-24T23:59:59Z'), 120)).toBe(false);
    expect(failingTooLong(since, new Date('2026-11-25T00:00:00Z'), 120)).toBe(true);
    expect(failingTooLong(null, new Date('2030-01-01T00:00:00Z'), 120)).toBe(false);
  });
});
