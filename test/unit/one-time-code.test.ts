import { describe, expect, it } from 'vitest';
import { checkCode, CodeHasher, MAX_CODE_ATTEMPTS, newCode } from '../../src/modules/onboarding';

const hasher = new CodeHasher('a-server-secret-of-at-least-32-characters');
const now = new Date('2026-11-28T10:00:00Z');

function row(code: string, overrides: Partial<{ attempts: number; expires_at: Date; completed_at: Date | null }> = {}) {
  const id = '6f1c2a3b-4d5e-4f6a-8b7c-9d0e1f2a3b4c';
  return { id, code_hash: hasher.hash(id, code), attempts: 0, expires_at: new Date(now.getTime() + 60_000), completed_at: null, ...overrides };
}

describe('one-time codes', () => {
  it('are six digits', () => {
    for (let i = 0; i < 200; i++) expect(newCode()).toMatch(/^[0-9]{6}$/);
  });

  it('are stored as a keyed hash bound to their row: not the code, and not the same in two rows or under another key', () => {
    const hash = hasher.hash('row-a', '123456');
    expect(hash).not.toContain('123456');
    expect(hasher.hash('row-b', '123456')).not.toBe(hash);
    expect(new CodeHasher('another-server-secret-of-32-characters!').hash('row-a', '123456')).not.toBe(hash);
    expect(hasher.matches('row-a', '123456', hash)).toBe(true);
    expect(hasher.matches('row-a', '123457', hash)).toBe(false);
  });

  it('the right code on a live row is right; a wrong one counts and says how many tries are left', () => {
    expect(checkCode(hasher, row('123456'), '123456', now)).toEqual({ outcome: 'right' });
    expect(checkCode(hasher, row('123456'), '654321', now)).toEqual({ outcome: 'wrong', attemptsLeft: MAX_CODE_ATTEMPTS - 1, counted: true });
    expect(checkCode(hasher, row('123456', { attempts: 3 }), '654321', now)).toEqual({ outcome: 'wrong', attemptsLeft: 1, counted: true });
  });

  it('the fifth wrong code is wrong with no try left (counted); after it, expiry, or use, even the right code is expired', () => {
    expect(checkCode(hasher, row('123456', { attempts: 4 }), '654321', now)).toEqual({ outcome: 'wrong', attemptsLeft: 0, counted: true });
    expect(checkCode(hasher, row('123456', { attempts: 5 }), '654321', now)).toEqual({ outcome: 'expired', counted: false });
    expect(checkCode(hasher, row('123456', { attempts: 5 }), '123456', now)).toEqual({ outcome: 'expired', counted: false });
    expect(checkCode(hasher, row('123456', { expires_at: now }), '123456', now)).toEqual({ outcome: 'expired', counted: false });
    expect(checkCode(hasher, row('123456', { completed_at: now }), '123456', now)).toEqual({ outcome: 'expired', counted: false });
    expect(checkCode(hasher, undefined, '123456', now)).toEqual({ outcome: 'expired', counted: false });
  });

  it('a row no code may complete (an existing account) answers the right code as a wrong one', () => {
    expect(checkCode(hasher, row('123456'), '123456', now, false)).toEqual({ outcome: 'wrong', attemptsLeft: MAX_CODE_ATTEMPTS - 1, counted: true });
  });
});
