import { describe, expect, it } from 'vitest';
import { checkIban, isValidIban, makeIban } from '../../src/iban';
import { isUuid } from '../../src/ids';

describe('IBAN (ISO 13616)', () => {
  it('accepts valid IBANs in any spacing and case, and refuses bad checksums and lengths', () => {
    for (const iban of ['DE89370400440532013000', 'FR7630006000011234567890189', 'GB29NWBK60161331926819', 'gb29 nwbk 6016 1331 9268 19']) {
      expect(checkIban(iban).valid).toBe(true);
    }
    expect(checkIban('DE89370400440532013001')).toMatchObject({ valid: false, reason: expect.stringContaining('mod-97') });
    expect(checkIban('DE8937040044053201300')).toMatchObject({ valid: false, reason: expect.stringContaining('22 characters') });
    expect(checkIban('not an iban').valid).toBe(false);
  });

  it('computes check digits for sandbox examples', () => {
    expect(makeIban('DE', '370400440532013000')).toBe('DE89370400440532013000');
    expect(checkIban(makeIban('CI', 'CI0080111111000000000002')).valid).toBe(true);
  });

  it('refuses an IBAN whose check digits are right but whose length is not its country\'s', () => {
    // DE IBANs have 22 characters; this one has 25 and passes mod-97 on its own.
    expect(checkIban('DE51370400440532013000123')).toMatchObject({ valid: false, reason: expect.stringContaining('22 characters') });
    // A country the registry does not list is checked by format and mod-97 only.
    expect(isValidIban(makeIban('ZZ', '12345678901'))).toBe(true);
  });

  it('reads dashes and spaces as separators and stores the compact upper-case form', () => {
    expect(checkIban('fr76-3000-6000-0112-3456-7890-189')).toEqual({ valid: true, iban: 'FR7630006000011234567890189' });
    expect(isValidIban('GB82WEST12345698765432')).toBe(true);
    expect(isValidIban('GB82WEST12345698765431')).toBe(false);
    expect(isValidIban('GB82 WEST 1234 5698 7654 32 X')).toBe(false);
  });
});

describe('isUuid', () => {
  it('accepts UUIDs in either case and nothing else', () => {
    expect(isUuid('00000000-0000-4000-8000-000000000000')).toBe(true);
    expect(isUuid('A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11')).toBe(true);
    for (const value of ['', 'nope', '00000000-0000-4000-8000-00000000000', '00000000-0000-4000-8000-0000000000000', ' 00000000-0000-4000-8000-000000000000', '00000000x0000-4000-8000-000000000000']) {
      expect(isUuid(value)).toBe(false);
    }
  });
});
