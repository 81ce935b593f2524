import { describe, expect, it } from 'vitest';
import { isCountryCode } from '../../src/domain/country-code';

describe('isCountryCode: ISO 3166-1 alpha-2, upper case', () => {
  it('accepts the countries of the platform and others', () => {
    for (const code of ['CI', 'SN', 'BJ', 'BF', 'ML', 'TG', 'NE', 'GW', 'CM', 'FR', 'US', 'GB', 'SS', 'XK']) expect(isCountryCode(code), code).toBe(true);
  });

  it('refuses codes no country is assigned, retired ones, regions and malformed ones', () => {
    for (const code of ['ZZ', 'QQ', 'AA', 'XX', 'EU', 'UN', 'UK', 'YU', 'ci', 'Ci', 'CIV', 'C', '', ' CI']) expect(isCountryCode(code), code).toBe(false);
  });
});
