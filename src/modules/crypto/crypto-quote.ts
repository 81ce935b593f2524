import { UnprocessableError } from '../../errors';
import { shardIdentity, walletIdentity, type AccountIdentity } from '../ledger';
import type { PlannedAccount, PlannedPosting } from '../writes';
import type { Rational } from './crypto-rates';

/** A quote is good for 30 seconds. */
export const QUOTE_TTL_SECONDS = 30;

/** Decimals of the rate a quote shows (its amounts are computed from the exact ratio). */
const RATE_DECIMALS = 10;

const ceilDiv = (a: bigint, b: bigint): bigint => (a + b - 1n) / b;

/** Units of `to` per unit of `from` (major units), from what each is worth in euros. */
export function rateBetween(from: Rational, to: Rational): Rational {
  return { num: from.num * to.den, den: from.den * to.num };
}

/** The rate as a decimal string, rounded down to 10 decimals, trailing zeros dropped: "655.957", "0.0015244901". */
export function formatRate(rate: Rational): string {
  const scaled = (rate.num * 10n ** BigInt(RATE_DECIMALS)) / rate.den;
  const text = scaled.toString().padStart(RATE_DECIMALS + 1, '0');
  const whole = text.slice(0, -RATE_DECIMALS);
  const fraction = text.slice(-RATE_DECIMALS).replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : whole;
}

export interface QuoteAmounts {
  fromAmountMinor: bigint;
  toAmountMinor: bigint;
  /** In the `from` currency, on top of what is converted. */
  feeMinor: bigint;
}

/**
 * The amounts of a quote, in minor units, from one side: the fee (`feeBps` of what the caller
 * pays, rounded up) comes out of `from`, the rest is converted and rounded down in `to` (given
 * `to`, `from` is the least that yields it). Never a float: the exact ratio throughout.
 */
export function quoteAmounts(input: { rate: Rational; fromExponent: number; toExponent: number; feeBps: number; fromAmountMinor?: bigint; toAmountMinor?: bigint }): QuoteAmounts {
  const bps = BigInt(input.feeBps);
  // Minor units of `to` per minor unit of `from`.
  const num = input.rate.num * 10n ** BigInt(input.toExponent);
  const den = input.rate.den * 10n ** BigInt(input.fromExponent);
  let amounts: QuoteAmounts;
  if (input.fromAmountMinor !== undefined) {
    const from = input.fromAmountMinor;
    const fee = ceilDiv(from * bps, 10_000n);
    amounts = { fromAmountMinor: from, feeMinor: fee, toAmountMinor: ((from - fee) * num) / den };
  } else {
    const to = input.toAmountMinor as bigint;
    const converted = ceilDiv(to * den, num);
    const from = ceilDiv(converted * 10_000n, 10_000n - bps);
    amounts = { fromAmountMinor: from, feeMinor: from - converted, toAmountMinor: to };
  }
  if (amounts.toAmountMinor <= 0n || amounts.feeMinor >= amounts.fromAmountMinor) {
    throw new UnprocessableError('AmountTooSmall', 'The amount converts to nothing after the fee: quote a larger amount.');
  }
  return amounts;
}

/** The platform's liquidity account of a currency: what it holds with its liquidity providers, on the other side of conversions. */
export function liquidityIdentity(currency: string): AccountIdentity {
  return { ownerType: 'platform', ownerId: null, currency, kind: 'external_clearing', externalRef: 'crypto:liquidity' };
}

/**
 * The stablecoin balance of an organisation in `asset`: a ledger account of the organisation
 * (kind org_account, as its foreign-currency accounts, so its tier limits apply), one per asset,
 * told apart from those accounts by its reference `crypto`; created on first use.
 */
export function organizationCryptoIdentity(organizationId: string, asset: string): AccountIdentity {
  return { ownerType: 'organization', ownerId: organizationId, currency: asset, kind: 'org_account', externalRef: 'crypto' };
}

/** Who pays and who receives a conversion: a user's wallets, or an organisation's accounts. */
export type ConversionParties = { userId: string } | { from: PlannedAccount; to: PlannedAccount };

/**
 * A conversion is one posting, balanced in each currency: the caller's `from` account pays the
 * amount, the liquidity account of `from` takes what is converted and the fee shard the fee; the
 * liquidity account of `to` pays the caller's `to` account (a user's wallets, or the accounts an
 * organisation's quote named). Its (kind, reference) is the conversion's id: never posted twice.
 */
export function conversionPosting(conversion: { id: string; fromCurrency: string; toCurrency: string } & ConversionParties & QuoteAmounts): PlannedPosting {
  const { id, fromCurrency, toCurrency, fromAmountMinor, toAmountMinor, feeMinor } = conversion;
  const payer = 'userId' in conversion ? walletIdentity(conversion.userId, fromCurrency) : conversion.from;
  const payee = 'userId' in conversion ? walletIdentity(conversion.userId, toCurrency) : conversion.to;
  return {
    kind: 'crypto.conversion',
    reference: id,
    metadata: { conversion_id: id },
    entries: [
      { account: payer, amountMinor: -fromAmountMinor },
      { account: liquidityIdentity(fromCurrency), amountMinor: fromAmountMinor - feeMinor },
      ...(feeMinor > 0n ? [{ account: shardIdentity('fees', fromCurrency, id), amountMinor: feeMinor }] : []),
      { account: liquidityIdentity(toCurrency), amountMinor: -toAmountMinor },
      { account: payee, amountMinor: toAmountMinor },
    ],
  };
}
