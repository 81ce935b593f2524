import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Clock } from '../../clock';
import type { IdempotentResource } from '../../contract';
import { readConnection } from '../../db/read-routing';
import { Keyset, toPage, type Page, type PageRequest } from '../../db/keyset';
import { ValidationError } from '../../errors';
import { formatMinor } from '../ledger';
import { CLAIMED, readLocked, type PlannedAccount } from '../writes';
import { cryptoCatalog } from './crypto-catalog';
import { amountsOf, applyOwnDecision, assertQuoteRequest, iso, priceQuote, type ConversionRow, type QuoteRequest, type QuoteRow } from './crypto-conversion-service';
import { AccountNotActiveError, ConversionNotFoundError, OrganizationNotVerifiedForCryptoError, QuoteAlreadyUsedError, QuoteExpiredError, QuoteNotFoundError } from './crypto-errors';
import { conversionPosting, formatRate, organizationCryptoIdentity, QUOTE_TTL_SECONDS } from './crypto-quote';
import type { RateSource } from './crypto-rates';

type OrganizationQuoteRow = QuoteRow & { organization_id: string; account_id: string | null };
type OrganizationConversionRow = ConversionRow & { organization_id: string; account_id: string | null };

export interface OrganizationQuoteRequest extends QuoteRequest {
  /** The organisation's account of the quote's fiat side (XOF, EUR or USD); none between two stablecoins. */
  accountId?: string;
}

const QUOTE_NOT_FOUND = 'No quote of this organisation has this id.';
const CONVERSION_NOT_FOUND = 'No conversion of this organisation has this id.';

const CONVERSIONS = new Keyset({ table: 'crypto_conversions', alias: 'c', noun: 'a conversion of this organisation' });

const isStablecoin = (code: string) => cryptoCatalog.asset(code) !== undefined;

/** 409 AccountNotActive: an account that is not active (inactive, pending, closed) neither pays nor receives the fiat side. */
function assertAccountActive(accountId: string, status: string | null): void {
  if (status !== 'active') throw new AccountNotActiveError(accountId, status ?? 'closed');
}

async function presentQuote(db: Knex | Knex.Transaction, row: OrganizationQuoteRow) {
  return {
    id: row.id,
    object: 'crypto_quote' as const,
    organization_id: row.organization_id,
    account_id: row.account_id,
    ...(await amountsOf(db, row)),
    rate: row.rate,
    expires_at: iso(row.expires_at),
    created_at: iso(row.created_at),
  };
}

async function presentConversion(db: Knex | Knex.Transaction, row: OrganizationConversionRow) {
  return {
    id: row.id,
    object: 'crypto_conversion' as const,
    organization_id: row.organization_id,
    account_id: row.account_id,
    quote_id: row.quote_id,
    ...(await amountsOf(db, row)),
    rate: row.rate,
    status: row.status,
    created_at: iso(row.created_at),
  };
}

export type OrganizationQuoteView = Awaited<ReturnType<typeof presentQuote>>;
export type OrganizationConversionView = Awaited<ReturnType<typeof presentConversion>>;

/**
 * Stablecoins of organisations: each holds its USDC and USDT as ledger accounts of its own
 * (organizationCryptoIdentity: kind org_account, so its tier limits apply as to its other
 * accounts), bought from and sold to one of its accounts in XOF, EUR or USD (the `account_id`
 * its quote names), or swapped one for the other. Only a verified organisation quotes and
 * converts (403 OrganizationNotVerified, as for payouts), and only through an account that is
 * `active` (409 AccountNotActive, read under the same lock). A conversion is one posting on the one
 * write path, as a user's: the quote locked in the statement that claims the Idempotency-Key,
 * then the posting, the quote used, the conversion and its event (to the organisation's
 * webhooks) in one statement.
 */
export class CryptoOrganizationService {
  constructor(private readonly deps: { knex: Knex; rates: RateSource; clock: Clock; feeBps: number }) {}

  /** GET .../crypto/balances: every supported stablecoin, held or not. */
  async balances(organizationId: string) {
    const db = readConnection(this.deps.knex);
    const assets = cryptoCatalog.assets();
    const rows = (await db('ledger_accounts')
      .where({ owner_type: 'organization', owner_id: organizationId, kind: 'org_account', external_ref: 'crypto' })
      .whereIn(
        'currency',
        assets.map((asset) => asset.code),
      )
      .select('currency', 'balance_minor', 'updated_at')) as Array<{ currency: string; balance_minor: string; updated_at: Date | string }>;
    const held = new Map(rows.map((row) => [row.currency.trim(), row]));
    const data = assets.map((asset) => {
      const row = held.get(asset.code);
      const balanceMinor = BigInt(row?.balance_minor ?? 0);
      return {
        object: 'crypto_balance' as const,
        currency: asset.code,
        currency_exponent: asset.exponent,
        balance: formatMinor(balanceMinor, asset.exponent),
        balance_minor: balanceMinor.toString(),
        updated_at: row ? iso(row.updated_at) : null,
      };
    });
    return { object: 'list' as const, data, has_more: false, next_cursor: null };
  }

  /** POST .../crypto/quotes. */
  async quote(trx: Knex.Transaction, organizationId: string, request: OrganizationQuoteRequest): Promise<{ view: OrganizationQuoteView; resource: IdempotentResource }> {
    assertQuoteRequest(request);
    const fiat = [request.fromCurrency, request.toCurrency].filter((code) => !isStablecoin(code));
    if (fiat.length === 2) throw ValidationError.field('to_currency', 'An organisation converts to or from a stablecoin (USDC or USDT); convert between its other currencies through its accounts.');
    if (fiat.length === 1 && request.accountId === undefined) throw ValidationError.field('account_id', `account_id is required: the organisation's ${fiat[0]} account that pays or receives the ${fiat[0]} side.`);
    if (fiat.length === 0 && request.accountId !== undefined) throw ValidationError.field('account_id', 'account_id names the account of a fiat side; a swap between two stablecoins has none.');
    const read = await readLocked<{ verification_status: string; account_currency: string | null; account_status: string | null }>(
      trx,
      `SELECT o.verification_status, a.currency::text AS account_currency, a.status AS account_status
         FROM organizations o LEFT JOIN organization_accounts a ON a.id = ?::uuid AND a.organization_id = o.id
        WHERE o.id = ?::uuid AND ${CLAIMED}`,
      [request.accountId ?? null, organizationId],
    );
    if (read?.verification_status !== 'verified') throw new OrganizationNotVerifiedForCryptoError();
    if (request.accountId !== undefined) {
      if (read.account_currency === null) throw ValidationError.field('account_id', 'No account of this organisation has this id.');
      if (read.account_currency.trim() !== fiat[0]) throw ValidationError.field('account_id', `The account holds ${read.account_currency.trim()}, not ${fiat[0]}.`);
      assertAccountActive(request.accountId, read.account_status);
    }
    const { from, to, rate, amounts } = await priceQuote(trx, this.deps, request);
    const now = this.deps.clock();
    const row: OrganizationQuoteRow = {
      id: crypto.randomUUID(),
      user_id: null,
      organization_id: organizationId,
      account_id: request.accountId ?? null,
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
    const resource: IdempotentResource = { type: 'crypto_quote', id: row.id, status: 'open', location: `/api/business/organizations/${organizationId}/crypto/quotes/${row.id}` };
    const { id: _id, ...columns } = row;
    await applyOwnDecision(trx, organizationId, { changes: [{ table: 'crypto_quotes', op: 'insert', id: row.id, set: columns }], answer: { resource } });
    return { view: await presentQuote(trx, row), resource };
  }

  /** POST .../crypto/conversions: executes one of the organisation's quotes once, before it expires. */
  async convert(trx: Knex.Transaction, organizationId: string, quoteId: string, actorUserId: string | null): Promise<{ view: OrganizationConversionView; resource: IdempotentResource }> {
    const read = await readLocked<{ verification_status: string; quote_id: string | null; account_ledger_id: string | null; account_status: string | null } & Partial<OrganizationQuoteRow>>(
      trx,
      `SELECT o.verification_status, q.id AS quote_id, q.*
         FROM organizations o
         LEFT JOIN LATERAL (
           SELECT cq.*, a.ledger_account_id AS account_ledger_id, a.status AS account_status
             FROM crypto_quotes cq LEFT JOIN organization_accounts a ON a.id = cq.account_id
            WHERE cq.id = ?::uuid AND cq.organization_id = o.id
              FOR UPDATE OF cq) q ON true
        WHERE o.id = ?::uuid AND ${CLAIMED}`,
      [quoteId, organizationId],
    );
    if (read?.verification_status !== 'verified') throw new OrganizationNotVerifiedForCryptoError();
    if (read.quote_id === null) throw new QuoteNotFoundError(QUOTE_NOT_FOUND);
    const { verification_status: _status, quote_id: _quoteId, account_ledger_id: accountLedgerId, account_status: accountStatus, ...rest } = read;
    const quote = rest as OrganizationQuoteRow;
    if (quote.used_at !== null) {
      const used = (await trx('crypto_conversions').where({ quote_id: quote.id }).first('id')) as { id: string } | undefined;
      throw new QuoteAlreadyUsedError(used?.id ?? null);
    }
    const now = this.deps.clock();
    const expiresAt = new Date(quote.expires_at);
    if (now.getTime() >= expiresAt.getTime()) throw new QuoteExpiredError(expiresAt);
    if (quote.account_id !== null) assertAccountActive(quote.account_id, accountStatus);
    const conversion: OrganizationConversionRow = {
      id: crypto.randomUUID(),
      user_id: null,
      organization_id: organizationId,
      account_id: quote.account_id,
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
    // The stablecoin side is the organisation's own stablecoin account; the fiat side the account its quote named.
    const sideOf = (currency: string): PlannedAccount => (isStablecoin(currency) ? organizationCryptoIdentity(organizationId, currency) : { id: accountLedgerId as string });
    const posting = conversionPosting({
      id: conversion.id,
      from: sideOf(conversion.from_currency),
      to: sideOf(conversion.to_currency),
      fromCurrency: conversion.from_currency,
      toCurrency: conversion.to_currency,
      fromAmountMinor: BigInt(conversion.from_amount_minor),
      toAmountMinor: BigInt(conversion.to_amount_minor),
      feeMinor: BigInt(conversion.fee_minor),
    });
    const view = await presentConversion(trx, conversion);
    const resource: IdempotentResource = { type: 'crypto_conversion', id: conversion.id, status: 'completed', location: `/api/business/organizations/${organizationId}/crypto/conversions/${conversion.id}` };
    const { id: _id, posting_id: _posting, ...columns } = conversion;
    await applyOwnDecision(trx, organizationId, {
      postings: [posting],
      changes: [
        { table: 'crypto_quotes', id: quote.id, expect: { used_at: null }, set: { used_at: now.toISOString() } },
        { table: 'crypto_conversions', op: 'insert', id: conversion.id, set: columns, postingIds: { posting_id: 0 } },
      ],
      events: [
        {
          subjectType: 'crypto_conversion',
          subjectId: conversion.id,
          type: 'crypto.conversion.completed',
          actorUserId,
          payload: {},
          occurredAt: now,
          organizationId,
          object: view,
          previousStatus: null,
        },
      ],
      answer: { resource },
    });
    return { view, resource };
  }

  /** GET .../crypto/conversions: a page, newest first. */
  async list(organizationId: string, request: PageRequest): Promise<Page<OrganizationConversionView>> {
    const db = readConnection(this.deps.knex);
    const rows = await CONVERSIONS.rows<OrganizationConversionRow>(db, db('crypto_conversions as c').select('c.*').where('c.organization_id', organizationId), { organization_id: organizationId }, request);
    const page = toPage(rows, request.limit);
    return { ...page, data: await Promise.all(page.data.map((row) => presentConversion(db, row))) };
  }

  /** GET .../crypto/conversions/{conversionId}. */
  async getConversion(organizationId: string, conversionId: string): Promise<OrganizationConversionView> {
    const db = readConnection(this.deps.knex);
    const row = (await db('crypto_conversions').where({ id: conversionId, organization_id: organizationId }).first()) as OrganizationConversionRow | undefined;
    if (!row) throw new ConversionNotFoundError(CONVERSION_NOT_FOUND);
    return presentConversion(db, row);
  }
}
