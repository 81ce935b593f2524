import type { CryptoConfig } from '../../config-crypto';

/** An exact ratio of two integers (never a float): num / den, den > 0. */
export interface Rational {
  num: bigint;
  den: bigint;
}

/** The currencies a quote converts between. */
export const CONVERTIBLE_CURRENCIES = ['XOF', 'EUR', 'USD', 'USDC', 'USDT'] as const;
export type ConvertibleCurrency = (typeof CONVERTIBLE_CURRENCIES)[number];

/** The port to a source of exchange rates: what one major unit of a currency is worth in euros. */
export interface RateSource {
  valueInEur(currency: ConvertibleCurrency): Promise<Rational>;
}

/** "655.957" -> 655957/1000, exactly. */
export function decimalToRational(text: string): Rational {
  const [whole, fraction = ''] = text.split('.');
  return { num: BigInt(`${whole}${fraction}`), den: 10n ** BigInt(fraction.length) };
}

/** The CFA franc's fixed parity: 1 EUR = 655.957 XOF. */
export const XOF_PER_EUR = '655.957';

/**
 * The sandbox's rates: XOF at the fixed parity, USD per euro and the stablecoins in dollars from
 * configuration (CRYPTO_RATE_*).
 */
export class SandboxRateSource implements RateSource {
  private readonly values: Record<ConvertibleCurrency, Rational>;

  constructor(rates: CryptoConfig['rates']) {
    const xofPerEur = decimalToRational(XOF_PER_EUR);
    const usdPerEur = decimalToRational(rates.usdPerEur);
    const inEur = (usd: Rational): Rational => ({ num: usd.num * usdPerEur.den, den: usd.den * usdPerEur.num });
    this.values = {
      EUR: { num: 1n, den: 1n },
      XOF: { num: xofPerEur.den, den: xofPerEur.num },
      USD: inEur({ num: 1n, den: 1n }),
      USDC: inEur(decimalToRational(rates.usdcInUsd)),
      USDT: inEur(decimalToRational(rates.usdtInUsd)),
    };
  }

  valueInEur(currency: ConvertibleCurrency): Promise<Rational> {
    return Promise.resolve(this.values[currency]);
  }
}
