import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Clock } from '../../clock';
import type { IdempotentResource } from '../../contract';
import { readConnection } from '../../db/read-routing';
import { ValidationError } from '../../errors';
import { currencies, formatMinor, parseAmount } from '../ledger';
import { asOwnLimit } from '../limits';
import { applyDecision, CLAIMED, readLocked, type Decision } from '../writes';
import { assertCryptoTier, requireCryptoTier } from './crypto-access';
import { ConversionNotFoundError, QuoteAlreadyUsedError, QuoteExpiredError, QuoteNotFoundError } from './crypto-errors';
import { conversionPosting, formatRate, QUOTE_TTL_SECONDS, quoteAmounts, rateBetween } from './crypto-quote';
import type { ConvertibleCurrency, RateSource } from './crypto-rates';

export interface QuoteRow {
  id: string;
  user_id: string | null;
  from_currency: string;
  to_currency: string;
  from_amount_minor: string;
  to_amount_minor: string;
  fee_minor: string;
  rate: string;
  expires_at: Date | string;
  used_at: Date | string | null;
  created_at: Date | string;
}

export interface ConversionRow extends Omit<QuoteRow, 'expires_at' | 'used_at'> {
  quote_id: string;
  status: 'completed';
  posting_id: string;
}

/** Amounts of a quote or a conversion as the API shows them: decimal strings and minor units. */
export async function amountsOf(db: Knex | Knex.Transaction, row: Pick<QuoteRow, 'from_currency' | 'to_currency' | 'from_amount_minor' | 'to_amount_minor' | 'fee_minor'>) {
  const from = await currencies.require(db, row.from_currency.trim());
  const to = await currencies.require(db, row.to_currency.trim());
  return {
    from_currency: from.code as ConvertibleCurrency,
    to_currency: to.code as ConvertibleCurrency,
    from_amount: formatMinor(BigInt(row.from_amount_minor), from.exponent),
    from_amount_minor: String(row.from_amount_minor),
    to_amount: formatMinor(BigInt(row.to_amount_minor), to.exponent),
    to_amount_minor: String(row.to_amount_minor),
    fee: formatMinor(BigInt(row.fee_minor), from.exponent),
    fee_minor: String(row.fee_minor),
  };
}

export const iso = (value: Date | string) => new Date(value).toISOString();

async function presentQuote(db: Knex | Knex.Transaction, row: QuoteRow) {
  return { id: row.id, object: 'crypto_quote' as const, ...(await amountsOf(db, row)), rate: row.rate, expires_at: iso(row.expires_at), created_at: iso(row.created_at) };
}

async function presentConversion(db: Knex | Knex.Transaction, row: ConversionRow) {
  return { id: row.id, object: 'crypto_conversion' as const, quote_id: row.quote_id, ...(await amountsOf(db, row)), rate: row.rate, status: row.status, created_at: iso(row.created_at) };
}

export type QuoteView = Awaited<ReturnType<typeof presentQuote>>;
export type ConversionView = Awaited<ReturnType<typeof presentConversion>>;

/**
 * applyDecision for a conversion: both sides are the caller's own, so a limit the ledger refuses
 * on the receiving side (its balance or inflow cap) is the caller's LimitExceeded, told in full.
 */
export async function applyOwnDecision(trx: Knex.Transaction, ownerId: string, decision: Decision): Promise<string[]> {
  try {
    return await applyDecision(trx, decision);
  } catch (error) {
    throw asOwnLimit(error, ownerId);
  }
}

export interface QuoteRequest {
  fromCurrency: ConvertibleCurrency;
  toCurrency: ConvertibleCurrency;
  fromAmount?: string;
  toAmount?: string;
}

/** The rules of every quote request, a user's or an organisation's: two currencies, one amount. */
export function assertQuoteRequest(request: QuoteRequest): void {
  if (request.fromCurrency === request.toCurrency) throw ValidationError.field('to_currency', 'to_currency must differ from from_currency.');
  if ((request.fromAmount === undefined) === (request.toAmount === undefined)) throw ValidationError.field('from_amount', 'Give exactly one of from_amount and to_amount.');
}

/** A quote request priced at the rate source's current rate (nothing written): both currencies, the rate, the amounts and the fee. */
export async function priceQuote(db: Knex | Knex.Transaction, deps: { rates: RateSource; feeBps: number }, request: QuoteRequest) {
  const from = await currencies.require(db, request.fromCurrency, 'from_currency');
  const to = await currencies.require(db, request.toCurrency, 'to_currency');
  const rate = rateBetween(await deps.rates.valueInEur(request.fromCurrency), await deps.rates.valueInEur(request.toCurrency));
  const amounts = quoteAmounts({
    rate,
    fromExponent: from.exponent,
    toExponent: to.exponent,
    feeBps: deps.feeBps,
    ...(request.fromAmount !== undefined ? { fromAmountMinor: parseAmount(request.fromAmount, from.exponent, { field: 'from_amount' }) } : { toAmountMinor: parseAmount(request.toAmount, to.exponent, { field: 'to_amount' }) }),
  });
  return { from, to, rate, amounts };
}

/**
 * Conversions between XOF, EUR, USD and the stablecoins: a quote fixes the rate and the amounts
 * for 30 seconds; a conversion executes one quote once, as one posting through the platform's
 * liquidity accounts (conversionPosting), on the one write path: the quote locked in the
 * statement that claims the Idempotency-Key, then the posting, the quote marked used, the
 * conversion and its event in one statement.
 */
export class CryptoConversionService {
  constructor(private readonly deps: { knex: Knex; rates: RateSource; clock: Clock; feeBps: number }) {}

  /** POST /crypto/quotes. */
  async quote(trx: Knex.Transaction, userId: string, request: QuoteRequest): Promise<{ view: QuoteView; resource: IdempotentResource }> {
    assertQuoteRequest(request);
    const read = await readLocked<{ tier: string }>(trx, `SELECT u.tier FROM users u WHERE u.id = ? AND ${CLAIMED}`, [userId]);
    assertCryptoTier(read?.tier);
    const { from, to, rate, amounts } = await priceQuote(trx, this.deps, request);
    const now = this.deps.clock();
    const row: QuoteRow = {
      id: crypto.randomUUID(),
      user_id: userId,
      from_currency: from.code,
      to_currency: to.code,
      from_amount_minor: amounts.fromAmountMinor.toString(),
      to_amount_minor: amounts.toAmountMinor.toString(),
      fee_minor: amounts.feeMinor.toString(),
      rate: formatRate(rate),
      expires_at: new Date(now.getTime() + QUOTE_TTL_SECONDS * 1000).toISOString(),
      used_at: null,
      created_at: now.toISOString(),
    };
    const resource: IdempotentResource = { type: 'crypto_quote', id: row.id, status: 'open', location: `/api/crypto/quotes/${row.id}` };
    const { id: _id, ...columns } = row;
    await applyDecision(trx, { changes: [{ table: 'crypto_quotes', op: 'insert', id: row.id, set: columns }], answer: { resource } });
    return { view: await presentQuote(trx, row), resource };
  }

  /** POST /crypto/conversions: executes the caller's quote once, before it expires. */
  async convert(trx: Knex.Transaction, userId: string, quoteId: string): Promise<{ view: ConversionView; resource: IdempotentResource }> {
    const read = await readLocked<QuoteRow & { tier: string }>(
      trx,
      `SELECT q.*, u.tier FROM crypto_quotes q JOIN users u ON u.id = q.user_id WHERE q.id = ? AND q.user_id = ? AND ${CLAIMED} FOR UPDATE OF q`,
      [quoteId, userId],
    );
    if (!read) {
      await requireCryptoTier(trx, userId);
      throw new QuoteNotFoundError();
    }
    const { tier, ...quote } = read;
    assertCryptoTier(tier);
    if (quote.used_at !== null) {
      const used = (await trx('crypto_conversions').where({ quote_id: quote.id }).first('id')) as { id: string } | undefined;
      throw new QuoteAlreadyUsedError(used?.id ?? null);
    }
    const now = this.deps.clock();
    const expiresAt = new Date(quote.expires_at);
    if (now.getTime() >= expiresAt.getTime()) throw new QuoteExpiredError(expiresAt);
    const conversion: ConversionRow = {
      id: crypto.randomUUID(),
      user_id: userId,
      quote_id: quote.id,
      from_currency: quote.from_currency.trim(),
      to_currency: quote.to_currency.trim(),
      from_amount_minor: String(quote.from_amount_minor),
      to_amount_minor: String(quote.to_amount_minor),
      fee_minor: String(quote.fee_minor),
      rate: quote.rate,
      status: 'completed',
      posting_id: '',
      created_at: now.toISOString(),
    };
    const posting = conversionPosting({
      id: conversion.id,
      userId,
      fromCurrency: conversion.from_currency,
      toCurrency: conversion.to_currency,
      fromAmountMinor: BigInt(conversion.from_amount_minor),
      toAmountMinor: BigInt(conversion.to_amount_minor),
      feeMinor: BigInt(conversion.fee_minor),
    });
    const view = await presentConversion(trx, conversion);
    const resource: IdempotentResource = { type: 'crypto_conversion', id: conversion.id, status: 'completed', location: `/api/crypto/conversions/${conversion.id}` };
    const { id: _id, posting_id: _posting, ...columns } = conversion;
    const [postingId] = await applyOwnDecision(trx, userId, {
      postings: [posting],
      changes: [
        { table: 'crypto_quotes', id: quote.id, expect: { used_at: null }, set: { used_at: now.toISOString() } },
        { table: 'crypto_conversions', op: 'insert', id: conversion.id, set: columns, postingIds: { posting_id: 0 } },
      ],
      events: [{ subjectType: 'crypto_conversion', subjectId: conversion.id, type: 'crypto.conversion.completed', actorUserId: userId, payload: {}, occurredAt: now, object: view, previousStatus: null }],
      answer: { resource },
    });
    conversion.posting_id = postingId as string;
    return { view, resource };
  }

  /** GET /crypto/conversions/{conversionId}. */
  async getConversion(userId: string, conversionId: string): Promise<ConversionView> {
    await requireCryptoTier(this.deps.knex, userId);
    const db = readConnection(this.deps.knex);
    const row = (await db('crypto_conversions').where({ id: conversionId, user_id: userId }).first()) as ConversionRow | undefined;
    if (!row) throw new ConversionNotFoundError();
    return presentConversion(db, row);
  }
}
