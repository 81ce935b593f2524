import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_PII_ENCRYPTION_KEY, loadConfig } from '../../src/config';
import { parsePiiKey, PiiCipher, PiiCipherError } from '../../src/pii-cipher';
import { productionEnv } from '../support/production-env';

const key = (id: string) => ({ id, key: crypto.randomBytes(32) });

describe('PiiCipher (AES-256-GCM, key id in front)', () => {
  it('opens what it sealed, and the ciphertext carries neither the plaintext nor a repeated nonce', () => {
    const cipher = new PiiCipher({ current: key('k1'), previous: [] });
    const a = cipher.sealText('CI0012345678', 'ctx');
    const b = cipher.sealText('CI0012345678', 'ctx');
    expect(a.startsWith('k1:')).toBe(true);
    expect(a).not.toBe(b);
    expect(a).not.toContain('CI0012345678');
    expect(Buffer.from(a.slice(3), 'base64url').toString('latin1')).not.toContain('CI0012345678');
    expect(cipher.openText(a, 'ctx')).toBe('CI0012345678');
    const bytes = crypto.randomBytes(1000);
    const sealed = cipher.sealBytes(bytes, 'doc');
    expect(PiiCipher.keyIdOf(sealed)).toBe('k1');
    expect(cipher.openBytes(sealed, 'doc').equals(bytes)).toBe(true);
  });

  it('refuses a ciphertext moved to another context, altered, or sealed under an unknown key, without echoing the value', () => {
    const cipher = new PiiCipher({ current: key('k1'), previous: [] });
    const sealed = cipher.sealText('Awa Traoré', 'users.first_name:1');
    expect(() => cipher.openText(sealed, 'users.first_name:2')).toThrow(PiiCipherError);
    const tampered = sealed.slice(0, -2) + (sealed.endsWith('A') ? 'BA' : 'AA');
    expect(() => cipher.openText(tampered, 'users.first_name:1')).toThrow(PiiCipherError);
    const other = new PiiCipher({ current: key('k2'), previous: [] });
    try {
      other.openText(sealed, 'users.first_name:1');
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message).toContain('k1');
      expect((error as Error).message).not.toContain('Awa');
    }
  });

  it('rotates: a new key seals, the previous one still opens what it sealed', () => {
    const old = key('2026-01');
    const before = new PiiCipher({ current: old, previous: [] }).sealText('1990-04-12', 'dob');
    const rotated = new PiiCipher({ current: key('2026-06'), previous: [old] });
    expect(rotated.openText(before, 'dob')).toBe('1990-04-12');
    expect(PiiCipher.keyIdOf(rotated.sealText('x', 'dob'))).toBe('2026-06');
  });

  it('parses keys as hex or base64, with or without an id', () => {
    const material = crypto.randomBytes(32);
    expect(parsePiiKey(`main:${material.toString('hex')}`, 'K')).toEqual({ id: 'main', key: material });
    expect(parsePiiKey(material.toString('base64'), 'K').key.equals(material)).toBe(true);
    expect(parsePiiKey(material.toString('base64'), 'K').id).toMatch(/^k[0-9a-f]{8}$/);
    expect(() => parsePiiKey('short', 'K')).toThrow(/K must be 32 bytes/);
  });
});

describe('PII_ENCRYPTION_KEY', () => {
  const production = productionEnv('PII_ENCRYPTION_KEY');

  it('refuses the development default in production (unset or given explicitly)', () => {
    expect(() => loadConfig(production)).toThrow(/PII_ENCRYPTION_KEY must be set in production/);
    expect(() => loadConfig({ ...production, PII_ENCRYPTION_KEY: DEFAULT_PII_ENCRYPTION_KEY })).toThrow(ConfigError);
    const own = crypto.randomBytes(32).toString('hex');
    expect(loadConfig({ ...production, PII_ENCRYPTION_KEY: `prod-1:${own}` }).pii.current.id).toBe('prod-1');
  });

  it('names a malformed key without echoing it, and refuses a repeated key id', () => {
    const secretText = 'not-a-key-but-secret-looking-text';
    try {
      loadConfig({ NODE_ENV: 'test', PII_ENCRYPTION_KEY: secretText });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).not.toContain(secretText);
    }
    const one = crypto.randomBytes(32).toString('hex');
    expect(() => loadConfig({ NODE_ENV: 'test', PII_ENCRYPTION_KEY: `a:${one}`, PII_ENCRYPTION_PREVIOUS_KEYS: `a:${one}` })).toThrow(/repeats a key id/);
    expect(loadConfig({ NODE_ENV: 'test', PII_ENCRYPTION_KEY: `b:${one}`, PII_ENCRYPTION_PREVIOUS_KEYS: `a:${one}` }).pii.previous.map((k) => k.id)).toEqual(['a']);
  });
});
