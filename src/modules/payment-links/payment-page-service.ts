import { DomainError, ValidationError, type FieldIssue } from '../../errors';
import { parseAmount } from '../ledger';
import {
  isLinkCode,
  issueFormToken,
  randomNonce,
  readFormToken,
  receiptToken,
  verifyAmountSignature,
  verifyReceiptToken,
  type FormTokenPayload,
} from './link-security';
import { PaymentRefused } from './payment-links-errors';
import { checkAmountForLink, checkPrintable } from './payment-links-service';
import type { PublicPaymentLink } from './link-views';
import type { Payment, PaymentLink } from './payment-links-types';
import type { PaymentsService } from './payments-service';
import { readSandboxPayer } from './sandbox';

/** A form token is accepted for this long after the page was shown. */
export const FORM_TOKEN_TTL_SECONDS = 2 * 3600;

/** Why the payment page refuses a request besides PaymentRefused (the page adapter picks its status). */
export type PaymentPageProblem = 'invalid_link' | 'invalid_form' | 'form_expired' | 'signed_link_expired' | 'payment_not_found';

export class PaymentPageError extends DomainError {
  constructor(
    readonly problem: PaymentPageProblem,
    message: string,
  ) {
    super('PaymentPageError', problem === 'payment_not_found' ? 'not_found' : problem === 'form_expired' ? 'forbidden' : problem === 'signed_link_expired' ? 'gone' : 'invalid', message);
  }
}

/** The query of a payment link's URL: each parameter once (a repeated one is invalid). */
export type PageQuery = Record<string, unknown>;
/** The fields of the sent payment form, as the browser sent them. */
export type PageForm = Record<string, unknown>;

/** What the page shows: the link, the terms it fixed, and the form token that carries them. */
export interface PaymentForm {
  link: PublicPaymentLink;
  amountMinor: bigint | null;
  reference: string | null;
  token: string;
  /** What the customer typed, to show again next to an error. */
  values?: { amount?: string; phone?: string };
  error?: { message: string; fields: FieldIssue[] };
}

export type SubmitOutcome = { kind: 'started'; link: PublicPaymentLink; payment: Payment; receiptToken: string } | { kind: 'invalid'; form: PaymentForm };

export interface PaymentReceipt {
  link: PublicPaymentLink;
  payment: Payment;
  /** Whether the customer may pay again from the link (another order, or a failed payment). */
  canRetry: boolean;
}

interface ResolvedTerms {
  amountMinor: bigint | null;
  reference: string | null;
  /** The `exp` of a signed URL (Unix seconds), null when the URL was not signed. */
  signedExpiresAt: number | null;
}

const invalidLink = (message: string) => new PaymentPageError('invalid_link', message);
const signedLinkExpired = () => new PaymentPageError('signed_link_expired', 'This signed payment link has expired: ask the merchant for a new link.');
const NEEDS_SIGNED_AMOUNT = 'This payment link needs an amount signed by the merchant: ask the merchant for a link to your order.';
const ONLY_SIGNED_AMOUNTS = 'This merchant accepts only signed amounts, and this link is not signed: ask the merchant for a new link.';

function queryValue(query: PageQuery, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalidLink(`The "${name}" parameter of this link is invalid.`);
  return value;
}

function codeOf(code: string): string {
  if (!isLinkCode(code)) throw new PaymentRefused('unknown_link', 'This payment link does not exist. Check the address you were given.');
  return code;
}

/** A ValidationError of `check` becomes `wrap(message)`; anything else goes through. */
function rethrowInvalid<T>(check: () => T, wrap: (message: string) => Error): T {
  try {
    return check();
  } catch (error) {
    if (error instanceof ValidationError) throw wrap(error.message);
    throw error;
  }
}

/**
 * The amount and the reference of the page: the link's own, or the URL's (validated like any
 * input; when signed, the signature must cover exactly them).
 */
function resolveTerms(query: PageQuery, link: PaymentLink, paySecret: string, now: Date): ResolvedTerms {
  const rawAmount = queryValue(query, 'amount');
  const rawReference = queryValue(query, 'reference');
  const sig = queryValue(query, 'sig');
  const exp = queryValue(query, 'exp');

  let reference: string | null = link.reference;
  if (rawReference !== undefined) {
    if (rawReference === '{REFERENCE}') throw invalidLink('This link still contains the {REFERENCE} placeholder: the merchant must replace it with the order reference.');
    const value = rethrowInvalid(
      () => checkPrintable('reference', rawReference, 128),
      (message) => invalidLink(`The reference in this link is not valid: ${message}`),
    );
    if (link.reference !== null && value !== link.reference) throw invalidLink('The reference in this link does not match the payment link.');
    reference = value;
  }

  let amountMinor: bigint | null = null;
  let signedExpiresAt: number | null = null;
  if (rawAmount !== undefined) {
    if (rawAmount === '{AMOUNT}') throw invalidLink('This link still contains the {AMOUNT} placeholder: the merchant must replace it with the amount to pay.');
    amountMinor = rethrowInvalid(
      () => {
        const minor = parseAmount(rawAmount, link.exponent, { field: 'amount' });
        checkAmountForLink(link, minor);
        return minor;
      },
      (message) => invalidLink(`The amount in this link is not valid: ${message}`),
    );
  }

  if (sig !== undefined || exp !== undefined) {
    if (sig === undefined || exp === undefined || amountMinor === null || rawReference === undefined || !/^[0-9]{1,12}$/.test(exp)) {
      throw invalidLink('This signed payment link is incomplete: ask the merchant for a new link.');
    }
    const expiresAt = Number(exp);
    const genuine = verifyAmountSignature(paySecret, { linkId: link.id, amountMinor, reference: reference ?? '', expiresAt }, sig);
    if (!genuine) throw invalidLink('The amount or the reference of this link was changed: it does not match the merchant’s signature. Ask the merchant for a new link.');
    if (expiresAt * 1000 <= now.getTime()) throw signedLinkExpired();
    signedExpiresAt = expiresAt;
  } else if (link.requireSignedAmount && (link.amountMinor === null || rawReference !== undefined)) {
    // The signature covers the amount and the reference together: on a link that requires it,
    // an unsigned reference is refused as an unsigned amount is (even when the amount is fixed).
    throw invalidLink(amountMinor === null && link.amountMinor === null ? NEEDS_SIGNED_AMOUNT : ONLY_SIGNED_AMOUNTS);
  }
  return { amountMinor: amountMinor ?? link.amountMinor, reference, signedExpiresAt };
}

/**
 * What the page checked on GET from the URL, checked again when the form is sent (the token
 * lives FORM_TOKEN_TTL_SECONDS): the signed URL's expiry, and a link that started requiring
 * signed amounts since refuses a form whose amount was not signed.
 */
function refuseStaleTerms(link: PaymentLink, token: FormTokenPayload, now: Date): void {
  if (token.signedExpiresAt !== null && token.signedExpiresAt * 1000 <= now.getTime()) throw signedLinkExpired();
  if (token.signedExpiresAt === null && link.requireSignedAmount && (link.amountMinor === null || token.reference !== link.reference)) {
    throw invalidLink(token.amountMinor === null ? NEEDS_SIGNED_AMOUNT : ONLY_SIGNED_AMOUNTS);
  }
}

/**
 * The amount and the reference of a payment are those of the page (carried by its form token,
 * which nobody can alter without breaking its MAC). A form that sends another amount (when the
 * page fixed it) or any other reference was edited: it is refused, never silently corrected.
 */
function refuseEditedTerms(link: PaymentLink, token: FormTokenPayload, form: PageForm): void {
  const edited = () =>
    new PaymentPageError('invalid_form', 'The amount or the reference of this payment was changed: it does not match the payment page. Open the payment link again.');
  if (form.reference !== undefined && (typeof form.reference !== 'string' || form.reference.trim() !== (token.reference ?? ''))) throw edited();
  if (token.amountMinor !== null && form.amount !== undefined) {
    const sent = rethrowInvalid(() => parseAmount(typeof form.amount === 'string' ? form.amount : undefined, link.exponent, { field: 'amount' }), edited);
    if (sent !== token.amountMinor) throw edited();
  }
}

export interface PaymentPageOptions {
  paySecret: string;
  now?: () => Date;
}

/**
 * The rules of the public payment page: which link and terms a URL shows (open), whether a
 * sent form may start a payment (submit), and who may see a payment's receipt (receipt).
 * The browser id binds a form to the browser that was shown it (the page keeps it in a cookie).
 */
export class PaymentPageService {
  private readonly secret: string;
  private readonly now: () => Date;

  constructor(
    private readonly payments: PaymentsService,
    options: PaymentPageOptions,
  ) {
    this.secret = options.paySecret;
    this.now = options.now ?? (() => new Date());
  }

  /** `browserId` is asked for only once the page can be shown (the page sets its cookie then). */
  async open(code: string, query: PageQuery, browserId: () => string): Promise<PaymentForm> {
    const link = await this.payments.payableLink(codeOf(code));
    const now = this.now();
    const { amountMinor, reference, signedExpiresAt } = resolveTerms(query, link, this.secret, now);
    const token = issueFormToken(this.secret, {
      linkId: link.id,
      browserId: browserId(),
      amountMinor,
      reference,
      nonce: randomNonce(),
      issuedAt: Math.floor(now.getTime() / 1000),
      signedExpiresAt,
    });
    return { link, amountMinor, reference, token };
  }

  async submit(code: string, form: PageForm, browserId: string | undefined): Promise<SubmitOutcome> {
    const link = await this.payments.linkForCode(codeOf(code));
    const token = typeof form.token === 'string' ? readFormToken(this.secret, form.token) : null;
    const now = this.now();
    const age = token ? Math.floor(now.getTime() / 1000) - token.issuedAt : Infinity;
    if (!token || token.linkId !== link.id || !browserId || token.browserId !== browserId || age < -60 || age > FORM_TOKEN_TTL_SECONDS) {
      throw new PaymentPageError('form_expired', 'This payment form has expired or was not sent from this page (cookies must be enabled). Open the payment link again.');
    }
    refuseStaleTerms(link, token, now);
    refuseEditedTerms(link, token, form);
    try {
      let amountMinor = token.amountMinor;
      if (amountMinor === null) {
        amountMinor = parseAmount(typeof form.amount === 'string' ? form.amount : undefined, link.exponent, { field: 'amount' });
        checkAmountForLink(link, amountMinor);
      }
      const payer = readSandboxPayer(form);
      // Only a reference the merchant fixed (the link's own, or one its signature covers) is the
      // payment's order reference and reserves the order; one an unsigned URL carried is what
      // the customer's browser sent: a note that never blocks nor satisfies the merchant's order.
      const merchantFixed = token.signedExpiresAt !== null || (link.reference !== null && token.reference === link.reference);
      const payment = await this.payments.start({
        linkId: link.id,
        nonce: token.nonce,
        amountMinor,
        reference: merchantFixed ? token.reference : null,
        customerReference: merchantFixed ? null : token.reference,
        payer,
      });
      return { kind: 'started', link, payment, receiptToken: receiptToken(this.secret, payment.id) };
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      const fields = Array.isArray(error.details) ? error.details : [];
      return {
        kind: 'invalid',
        form: {
          link,
          amountMinor: token.amountMinor,
          reference: token.reference,
          token: form.token as string,
          values: {
            amount: typeof form.amount === 'string' ? form.amount.slice(0, 24) : undefined,
            phone: typeof form.phone === 'string' ? form.phone.slice(0, 24) : undefined,
          },
          error: { message: fields.length ? 'Check the payment details.' : error.message, fields },
        },
      };
    }
  }

  async receipt(code: string, paymentId: string, receiptTokenValue: unknown): Promise<PaymentReceipt> {
    const link = await this.payments.linkForCode(codeOf(code));
    const notFound = () => new PaymentPageError('payment_not_found', 'This payment does not exist.');
    if (typeof receiptTokenValue !== 'string' && receiptTokenValue !== undefined) throw invalidLink('The "t" parameter of this link is invalid.');
    if (!/^[0-9a-f-]{36}$/i.test(paymentId) || !receiptTokenValue || !verifyReceiptToken(this.secret, paymentId, receiptTokenValue)) throw notFound();
    const payment = await this.payments.forPage(link.id, paymentId);
    if (!payment) throw notFound();
    const canRetry = link.status === 'active' && link.organizationCanCollect && (link.kind === 'link' || link.amountMinor !== null);
    return { link, payment, canRetry };
  }
}
