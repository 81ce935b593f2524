import crypto from 'node:crypto';
import zlib from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  acceptedScopes,
  API_KEY_SCOPES,
  apiKeySecretMatches,
  checksumOf,
  crc32,
  displayPrefix,
  formatApiKey,
  hashApiKeySecret,
  looksLikeApiKey,
  normalizeScopes,
  parseApiKey,
  randomBase62,
  redactApiKeys,
  scopeGrants,
  toBase62,
} from '../../src/modules/api-keys';

const BASE62 = /^[0-9A-Za-z]*$/;
const PUBLIC_ID = '4kQ9vX2mB7pZ';
const SECRET = 'RWWf2Y2IyPc4JkUcBzQePHFjUKg7dv8R';
const PEPPER = 'a-pepper-of-at-least-thirty-two-characters-long';
const base62Char = fc.constantFrom(...'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz');
const base62String = (length: number) => fc.array(base62Char, { minLength: length, maxLength: length }).map((chars) => chars.join(''));

describe('CRC32 and base62', () => {
  it('crc32 is zlib’s CRC-32 (known vectors and random texts)', () => {
    expect(crc32('')).toBe(0);
    expect(crc32('123456789')).toBe(0xcbf43926);
    expect(crc32('The quick brown fox jumps over the lazy dog')).toBe(0x414fa339);
    const zlibCrc = (zlib as unknown as { crc32?: (data: string) => number }).crc32;
    for (let i = 0; i < 50; i += 1) {
      const text = crypto.randomBytes(crypto.randomInt(1, 80)).toString('base64');
      if (zlibCrc) expect(crc32(text)).toBe(zlibCrc(text));
    }
  });

  it('toBase62 pads to the width, uses the 62 characters in order, and refuses what does not fit', () => {
    expect(toBase62(0, 6)).toBe('000000');
    expect(toBase62(61, 2)).toBe('0z');
    expect(toBase62(62, 2)).toBe('10');
    expect(toBase62(10, 1)).toBe('A');
    expect(toBase62(36, 1)).toBe('a');
    expect(toBase62(0xffffffff, 6)).toBe('4gfFC3');
    expect(toBase62(62 ** 6 - 1, 6)).toBe('zzzzzz');
    expect(() => toBase62(62 ** 6, 6)).toThrow(new RangeError('56800235584 does not fit in 6 base62 characters'));
    for (const value of [-1, -62, 1.5, Number.MAX_SAFE_INTEGER + 1, Number.NaN]) {
      expect(() => toBase62(value, 20), String(value)).toThrow(new RangeError('toBase62 takes a non-negative safe integer'));
    }
  });

  it('toBase62 reads back to the same number', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), (value) => {
        const digits = toBase62(value, 6);
        expect(digits).toHaveLength(6);
        const back = [...digits].reduce((acc, c) => acc * 62 + '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'.indexOf(c), 0);
        expect(back).toBe(value);
      }),
    );
  });
});

describe('the key format', () => {
  it('is prefix, public id, _, 32 random base62 characters and the 6-character CRC32 of the rest', () => {
    const key = formatApiKey('test', PUBLIC_ID, SECRET);
    expect(key).toBe(`sk_test_${PUBLIC_ID}_${SECRET}${checksumOf(`sk_test_${PUBLIC_ID}_${SECRET}`)}`);
    expect(key).toHaveLength(8 + 12 + 1 + 32 + 6);
    expect(checksumOf(`sk_test_${PUBLIC_ID}_${SECRET}`)).toBe(toBase62(crc32(`sk_test_${PUBLIC_ID}_${SECRET}`), 6));
    expect(formatApiKey('live', PUBLIC_ID, SECRET).startsWith('sk_live_')).toBe(true);
    expect(displayPrefix('live', PUBLIC_ID)).toBe(`sk_live_${PUBLIC_ID}`);
    expect(displayPrefix('test', PUBLIC_ID)).toBe(`sk_test_${PUBLIC_ID}`);
  });

  it('parses a key of its environment, and nothing else', () => {
    const key = formatApiKey('test', PUBLIC_ID, SECRET);
    expect(parseApiKey(key, 'test')).toEqual({ environment: 'test', publicId: PUBLIC_ID, secret: SECRET });
    const live = formatApiKey('live', PUBLIC_ID, SECRET);
    expect(parseApiKey(live, 'live')).toEqual({ environment: 'live', publicId: PUBLIC_ID, secret: SECRET });
    expect(parseApiKey(live, 'test')).toBeUndefined();
    expect(parseApiKey(key, 'live')).toBeUndefined();
    // The checksum covers the prefix: a test key relabelled live is refused.
    expect(parseApiKey(key.replace('sk_test_', 'sk_live_'), 'live')).toBeUndefined();
    for (const bad of ['', 'sk_test_', key.slice(0, -1), `${key}0`, ` ${key}`, `${key} `, key.replace('_', '-'), key.replace(`${PUBLIC_ID}_`, PUBLIC_ID), `x${key}`, key.toUpperCase()]) {
      expect(parseApiKey(bad, 'test'), bad).toBeUndefined();
    }
    // A public id one character short or long, a secret one short or long.
    expect(parseApiKey(formatApiKey('test', PUBLIC_ID.slice(1), SECRET), 'test')).toBeUndefined();
    expect(parseApiKey(formatApiKey('test', `${PUBLIC_ID}a`, SECRET), 'test')).toBeUndefined();
    expect(parseApiKey(formatApiKey('test', PUBLIC_ID, SECRET.slice(1)), 'test')).toBeUndefined();
    expect(parseApiKey(formatApiKey('test', PUBLIC_ID, `${SECRET}a`), 'test')).toBeUndefined();
    expect(parseApiKey(formatApiKey('test', PUBLIC_ID, `${SECRET.slice(1)}-`), 'test')).toBeUndefined();
  });

  it('any one mistyped character of a key makes it unparseable (the checksum or the shape catches it)', () => {
    fc.assert(
      fc.property(base62String(12), base62String(32), fc.nat(), base62Char, (publicId, secret, position, replacement) => {
        const key = formatApiKey('test', publicId, secret);
        expect(parseApiKey(key, 'test')).toEqual({ environment: 'test', publicId, secret });
        const at = position % key.length;
        fc.pre(key[at] !== replacement);
        const typo = `${key.slice(0, at)}${replacement}${key.slice(at + 1)}`;
        expect(parseApiKey(typo, 'test')).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });

  it('two swapped neighbouring characters are caught too', () => {
    fc.assert(
      fc.property(base62String(12), base62String(32), fc.nat(), (publicId, secret, a) => {
        const key = formatApiKey('test', publicId, secret);
        const at = 8 + (a % (key.length - 9));
        fc.pre(key[at] !== key[at + 1]);
        const swapped = `${key.slice(0, at)}${key[at + 1]}${key[at]}${key.slice(at + 2)}`;
        expect(parseApiKey(swapped, 'test')).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });

  it('redactApiKeys cuts every key-shaped text to its prefix and leaves other text alone', () => {
    const key = formatApiKey('test', PUBLIC_ID, SECRET);
    const live = formatApiKey('live', PUBLIC_ID, SECRET);
    expect(redactApiKeys(`/api/x?key=${key}&b=${live}`)).toBe('/api/x?key=sk_test_[redacted]&b=sk_live_[redacted]');
    expect(redactApiKeys(`a ${key.slice(0, 30)}`)).toBe('a sk_test_[redacted]');
    expect(redactApiKeys('/api/business/organizations/x/payments?limit=5')).toBe('/api/business/organizations/x/payments?limit=5');
    expect(redactApiKeys('task_test_ok sk_other_x')).toBe('task_test_ok sk_other_x');
  });

  it('looksLikeApiKey tells keys from JWTs by their prefix', () => {
    expect(looksLikeApiKey('sk_test_x')).toBe(true);
    expect(looksLikeApiKey('sk_live_x')).toBe(true);
    expect(looksLikeApiKey('sk_other_x')).toBe(false);
    expect(looksLikeApiKey('eyJhbGciOiJIUzI1NiJ9.e30.x')).toBe(false);
    expect(looksLikeApiKey('rk_live_x')).toBe(false);
  });

  it('randomBase62 gives the length asked, base62 only, skipping bytes of 248 and over (no bias)', () => {
    expect(randomBase62(32, crypto.randomBytes)).toMatch(/^[0-9A-Za-z]{32}$/);
    // Bytes 248..255 are dropped; 0, 61, 62 and 247 map to 0, z, 0, z.
    let calls = 0;
    const bytes = (size: number) => {
      calls += 1;
      return calls === 1 ? Buffer.from([248, 255, 0, 61, 62, 247, 250, 10].slice(0, size)) : Buffer.alloc(size, 36);
    };
    expect(randomBase62(4, bytes)).toBe('0z0z');
    calls = 0;
    expect(randomBase62(8, bytes)).toBe('0z0zAaaa');
    const counts = new Map<string, number>();
    for (const c of randomBase62(62_000, crypto.randomBytes)) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(62);
    for (const n of counts.values()) expect(n).toBeGreaterThan(700); // 1000 expected each
  });

  it('two keys made from fresh randomness never share public id or secret', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i += 1) seen.add(randomBase62(12, crypto.randomBytes));
    expect(seen.size).toBe(200);
    expect(BASE62.test([...seen].join(''))).toBe(true);
  });
});

describe('the stored hash', () => {
  it('is HMAC-SHA256 under the pepper of the public id and the secret, in hex', () => {
    const expected = crypto.createHmac('sha256', PEPPER).update(`${PUBLIC_ID}.${SECRET}`).digest('hex');
    expect(hashApiKeySecret(PEPPER, PUBLIC_ID, SECRET)).toBe(expected);
    expect(hashApiKeySecret('another-pepper-of-thirty-two-characters-long!', PUBLIC_ID, SECRET)).not.toBe(expected);
    expect(hashApiKeySecret(PEPPER, 'AAAAAAAAAAAA', SECRET)).not.toBe(expected);
  });

  it('matches only the same secret, public id and pepper; a malformed stored value never matches', () => {
    const stored = hashApiKeySecret(PEPPER, PUBLIC_ID, SECRET);
    expect(apiKeySecretMatches(PEPPER, PUBLIC_ID, SECRET, stored)).toBe(true);
    expect(apiKeySecretMatches(PEPPER, PUBLIC_ID, `${SECRET.slice(0, -1)}x`, stored)).toBe(false);
    expect(apiKeySecretMatches(PEPPER, 'AAAAAAAAAAAA', SECRET, stored)).toBe(false);
    expect(apiKeySecretMatches('another-pepper-of-thirty-two-characters-long!', PUBLIC_ID, SECRET, stored)).toBe(false);
    for (const bad of ['', stored.slice(1), `${stored}0`, stored.toUpperCase(), `${stored.slice(0, -1)}g`, '0'.repeat(64)]) {
      expect(apiKeySecretMatches(PEPPER, PUBLIC_ID, SECRET, bad), bad).toBe(false);
    }
  });
});

describe('scopes', () => {
  it('are read and write of each resource the contract lists, and members:read alone (a key never changes members)', () => {
    expect(API_KEY_SCOPES).toEqual([
      'payment_links:read', 'payment_links:write', 'payments:read', 'payments:write', 'payouts:read', 'payouts:write', 'invoices:read', 'invoices:write',
      'accounts:read', 'accounts:write', 'network_status:read', 'network_status:write', 'events:read', 'events:write',
      'webhook_endpoints:read', 'webhook_endpoints:write', 'crypto:read', 'crypto:write', 'members:read',
    ]);
  });

  it('a read is granted by the read or the write scope of its resource; a write only by the write', () => {
    expect(scopeGrants(['payments:read'], 'payments:read')).toBe(true);
    expect(scopeGrants(['payments:write'], 'payments:read')).toBe(true);
    expect(scopeGrants(['payments:read'], 'payments:write')).toBe(false);
    expect(scopeGrants(['payments:write'], 'payments:write')).toBe(true);
    expect(scopeGrants(['payment_links:write'], 'payments:read')).toBe(false);
    expect(scopeGrants(['payment_links:write', 'invoices:read'], 'invoices:read')).toBe(true);
    expect(scopeGrants([], 'payments:read')).toBe(false);
    expect(scopeGrants(['payments:read'], 'payments:admin')).toBe(false);
    expect(scopeGrants(['payments:admin'], 'payments:read')).toBe(false);
    // A level other than read and write is never granted, not even by itself.
    expect(scopeGrants(['payments:admin'], 'payments:admin')).toBe(false);
    expect(scopeGrants(['network_status:write'], 'network:read')).toBe(false);
  });

  it('every scope grants itself and no scope of another resource', () => {
    for (const granted of API_KEY_SCOPES) {
      for (const required of API_KEY_SCOPES) {
        const [gr, gl] = granted.split(':');
        const [rr, rl] = required.split(':');
        expect(scopeGrants([granted], required), `${granted} -> ${required}`).toBe(gr === rr && (gl === rl || (rl === 'read' && gl === 'write')));
      }
    }
  });

  it('accepted scopes: a read is accepted with its write; a write alone', () => {
    expect(acceptedScopes('payments:read')).toEqual(['payments:read', 'payments:write']);
    expect(acceptedScopes('invoices:write')).toEqual(['invoices:write']);
    expect(acceptedScopes('network_status:read')).toEqual(['network_status:read', 'network_status:write']);
  });

  it('normalizeScopes keeps known scopes once, in the contract order', () => {
    expect(normalizeScopes(['payments:read', 'invoices:write', 'payments:read', 'payment_links:read'])).toEqual(['payment_links:read', 'payments:read', 'invoices:write']);
  });
});
