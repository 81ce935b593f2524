import { describe, expect, it } from 'vitest';
import { readCryptoConfig } from '../../src/config-crypto';

const JWT = 'a-jwt-secret-of-at-least-32-characters-long';

describe('crypto configuration', () => {
  it('outside production: the sandbox, a block every 10 s, a 0.5 % fee, the default rates and an address secret derived from JWT_SECRET', () => {
    const config = readCryptoConfig({}, 'development', JWT);
    expect(config).toMatchObject({ network: 'sandbox', blockEverySeconds: 10, conversionFeeBps: 50, rates: { usdPerEur: '1.08', usdcInUsd: '1', usdtInUsd: '1' } });
    expect(config.addressSecret).toHaveLength(64);
    expect(readCryptoConfig({}, 'development', `${JWT}x`).addressSecret).not.toBe(config.addressSecret);
  });

  it('production refuses no CRYPTO_NETWORK and no CRYPTO_ADDRESS_SECRET, and accepts them named', () => {
    expect(() => readCryptoConfig({}, 'production', JWT)).toThrow(/CRYPTO_NETWORK/);
    expect(() => readCryptoConfig({ CRYPTO_NETWORK: 'sandbox' }, 'production', JWT)).toThrow(/CRYPTO_ADDRESS_SECRET/);
    expect(readCryptoConfig({ CRYPTO_NETWORK: 'sandbox', CRYPTO_ADDRESS_SECRET: 's'.repeat(32) }, 'production', JWT).addressSecret).toBe('s'.repeat(32));
  });

  it('refuses a rate that is not a positive decimal, and an unknown network', () => {
    for (const bad of ['0', '-1', '1e3', '1.0000000001', 'abc']) expect(() => readCryptoConfig({ CRYPTO_RATE_USD_PER_EUR: bad }, 'development', JWT), bad).toThrow(/CRYPTO_RATE_USD_PER_EUR/);
    expect(() => readCryptoConfig({ CRYPTO_NETWORK: 'mainnet' }, 'development', JWT)).toThrow(/CRYPTO_NETWORK/);
  });

  it('a withdrawal address waits 24 hours by default, CRYPTO_ADDRESS_ACTIVATION_SECONDS otherwise, within 0 to 30 days', () => {
    expect(readCryptoConfig({}, 'development', JWT).addressActivationSeconds).toBe(86_400);
    expect(readCryptoConfig({ CRYPTO_ADDRESS_ACTIVATION_SECONDS: '0' }, 'development', JWT).addressActivationSeconds).toBe(0);
    for (const bad of ['-1', '2592001', 'soon']) expect(() => readCryptoConfig({ CRYPTO_ADDRESS_ACTIVATION_SECONDS: bad }, 'development', JWT), bad).toThrow(/CRYPTO_ADDRESS_ACTIVATION_SECONDS/);
  });
});
