import crypto from 'node:crypto';
import { ConfigError, type Env, integer, oneOf } from './config-values';

/** Crypto: the network adapter, the sandbox's clock and rates, the conversion fee (docs/operators/configuration.md). */
export interface CryptoConfig {
  /** CRYPTO_NETWORK: `sandbox`, the in-process simulator (no default in production). */
  network: 'sandbox';
  /** CRYPTO_SANDBOX_BLOCK_SECONDS: the simulator mines one block on every network this often. */
  blockEverySeconds: number;
  /** CRYPTO_ADDRESS_SECRET: keys the derivation of deposit addresses (derived from JWT_SECRET outside production). */
  addressSecret: string;
  /** CRYPTO_CONVERSION_FEE_BPS: the fee of a conversion, in basis points of what is converted. */
  conversionFeeBps: number;
  /** CRYPTO_ADDRESS_ACTIVATION_SECONDS: how long a new withdrawal address waits before it is usable. */
  addressActivationSeconds: number;
  /** The sandbox rate source: CRYPTO_RATE_USD_PER_EUR, CRYPTO_RATE_USDC_IN_USD, CRYPTO_RATE_USDT_IN_USD (decimal strings; XOF/EUR is the fixed parity). */
  rates: { usdPerEur: string; usdcInUsd: string; usdtInUsd: string };
}

const RATE = /^(0|[1-9][0-9]{0,8})(\.[0-9]{1,9})?$/;

function rate(env: Env, key: string, fallback: string): string {
  const value = env[key]?.trim() || fallback;
  if (!RATE.test(value) || /^0(\.0*)?$/.test(value)) throw new ConfigError(`${key} must be a positive decimal such as ${fallback} (at most 9 decimals)`);
  return value;
}

export function readCryptoConfig(env: Env, nodeEnv: string, jwtSecret: string): CryptoConfig {
  if (nodeEnv === 'production' && !env.CRYPTO_NETWORK) throw new ConfigError('CRYPTO_NETWORK must be set in production (one of sandbox); the sandbox simulates the networks and moves no real coins');
  const secret = env.CRYPTO_ADDRESS_SECRET;
  if (nodeEnv === 'production' && (!secret || secret.length < 32)) throw new ConfigError('CRYPTO_ADDRESS_SECRET must be set in production (at least 32 characters)');
  return {
    network: oneOf(env, 'CRYPTO_NETWORK', 'sandbox', ['sandbox'] as const),
    blockEverySeconds: integer(env, 'CRYPTO_SANDBOX_BLOCK_SECONDS', 10, 1, 3_600),
    addressSecret: secret || crypto.createHmac('sha256', jwtSecret).update('crypto-address-secret').digest('hex'),
    conversionFeeBps: integer(env, 'CRYPTO_CONVERSION_FEE_BPS', 50, 0, 1_000),
    addressActivationSeconds: integer(env, 'CRYPTO_ADDRESS_ACTIVATION_SECONDS', 86_400, 0, 30 * 86_400),
    rates: { usdPerEur: rate(env, 'CRYPTO_RATE_USD_PER_EUR', '1.08'), usdcInUsd: rate(env, 'CRYPTO_RATE_USDC_IN_USD', '1'), usdtInUsd: rate(env, 'CRYPTO_RATE_USDT_IN_USD', '1') },
  };
}
