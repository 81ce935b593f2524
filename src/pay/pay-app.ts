import crypto from 'node:crypto';
import express, { type ErrorRequestHandler, type Express, type Request, type Response } from 'express';
import helmet from 'helmet';
import type { Logger } from 'pino';
import type { Config } from '../config';
import { payPageRateLimiter, type RateLimitBackend } from '../http/rate-limit';
import { DomainError, ValidationError } from '../errors';
import { parseAmount } from '../modules/ledger';
import {
  isLinkCode,
  issueFormToken,
  randomNonce,
  readFormToken,
  receiptToken,
  verifyAmountSignature,
  verifyReceiptToken,
  type FormTokenPayload,
} from '../modules/payment-links/link-security';
import { PaymentRefused } from '../modules/payment-links/payment-links-errors';
import { checkAmountForLink, checkPrintable } from '../modules/payment-links/payment-links-service';
import type { PaymentLink } from '../modules/payment-links/payment-links-types';
import { readSandboxPayer } from '../modules/payment-links/sandbox';
import type { Services } from '../services';
import { PAY_CSS, messagePage, paymentFormPage, resultPage, type PaymentFormView } from './pay-pages';

export interface PayAppDeps {
  config: Config;
  logger: Logger;
  services: Services;
  /** The API's rate-limit store backend (Redis when REDIS_URL is set): the page counts there too. */
  rateLimitBackend: RateLimitBackend;
}

/** A form token is accepted for this long after the page was shown. */
const FORM_TOKEN_TTL_SECONDS = 2 * 3600;
const BROWSER_COOKIE = 'pay_bid';
const BROWSER_ID = /^[A-Za-z0-9_-]{24}$/;

/** Answered as an HTML page with its status (never JSON, never a stack trace). */
class PageError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

const REFUSAL_STATUS: Record<PaymentRefused['reason'], { status: number; title: string }> = {
  unknown_link: { status: 404, title: 'Payment link not found' },
  link_inactive: { status: 410, title: 'Payment link deactivated' },
  link_expired: { status: 410, title: 'Payment link expired' },
  link_completed: { status: 410, title: 'Payment link already paid' },
  link_busy: { status: 409, title: 'Payment in progress' },
  reference_paid: { status: 409, title: 'Order already paid' },
  account_unavailable: { status: 409, title: 'Payments unavailable' },
  merchant_unavailable: { status: 410, title: 'Payments unavailable' },
};

function sendPage(res: Response, status: number, html: string): void {
  res.status(status).type('html').setHeader('Cache-Control', 'no-store');
  res.send(html);
}

function readCookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return undefined;
}

/** One query parameter as a single string (a repeated parameter is invalid). */
function queryValue(req: Request, name: string): string | undefined {
  const value = (req.query as Record<string, unknown>)[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new PageError(400, 'Invalid payment link', `The "${name}" parameter of this link is invalid.`);
  return value;
}

interface ResolvedTerms {
  amountMinor: bigint | null;
  reference: string | null;
  /** The `exp` of a signed URL (Unix seconds), null when the URL was not signed. */
  signedExpiresAt: number | null;
}

/**
 * The amount and the reference of the page: the link's own, or the URL's (validated like any
 * input; when signed, the signature must cover exactly them).
 */
function resolveTerms(req: Request, link: PaymentLink, paySecret: string, now: Date): ResolvedTerms {
  const rawAmount = queryValue(req, 'amount');
  const rawReference = queryValue(req, 'reference');
  const sig = queryValue(req, 'sig');
  const exp = queryValue(req, 'exp');
  const invalid = (message: string) => new PageError(400, 'Invalid payment link', message);

  let reference: string | null = link.reference;
  if (rawReference !== undefined) {
    if (rawReference === '{REFERENCE}') throw invalid('This link still contains the {REFERENCE} placeholder: the merchant must replace it with the order reference.');
    let value: string | null;
    try {
      value = checkPrintable('reference', rawReference, 128);
    } catch (error) {
      if (error instanceof ValidationError) throw invalid(`The reference in this link is not valid: ${error.message}`);
      throw error;
    }
    if (link.reference !== null && value !== link.reference) throw invalid('The reference in this link does not match the payment link.');
    reference = value;
  }

  let amountMinor: bigint | null = null;
  let signedExpiresAt: number | null = null;
  if (rawAmount !== undefined) {
    if (rawAmount === '{AMOUNT}') throw invalid('This link still contains the {AMOUNT} placeholder: the merchant must replace it with the amount to pay.');
    try {
      amountMinor = parseAmount(rawAmount, link.exponent, { field: 'amount' });
      checkAmountForLink(link, amountMinor);
    } catch (error) {
      if (error instanceof ValidationError) throw invalid(`The amount in this link is not valid: ${error.message}`);
      throw error;
    }
  }

  if (sig !== undefined || exp !== undefined) {
    if (sig === undefined || exp === undefined || amountMinor === null || rawReference === undefined || !/^[0-9]{1,12}$/.test(exp)) {
      throw invalid('This signed payment link is incomplete: ask the merchant for a new link.');
    }
    const expiresAt = Number(exp);
    const genuine = verifyAmountSignature(paySecret, { linkId: link.id, amountMinor, reference: reference ?? '', expiresAt }, sig);
    if (!genuine) throw invalid('The amount or the reference of this link was changed: it does not match the merchant’s signature. Ask the merchant for a new link.');
    if (expiresAt * 1000 <= now.getTime()) throw signedLinkExpired();
    signedExpiresAt = expiresAt;
  } else if (link.requireSignedAmount && (link.amountMinor === null || rawReference !== undefined)) {
    // The signature covers the amount and the reference together: on a link that requires it,
    // an unsigned reference is refused as an unsigned amount is (even when the amount is fixed).
    throw invalid(
      amountMinor === null && link.amountMinor === null
        ? 'This payment link needs an amount signed by the merchant: ask the merchant for a link to your order.'
        : 'This merchant accepts only signed amounts, and this link is not signed: ask the merchant for a new link.',
    );
  }
  return { amountMinor: amountMinor ?? link.amountMinor, reference, signedExpiresAt };
}

function signedLinkExpired(): PageError {
  return new PageError(410, 'Payment link expired', 'This signed payment link has expired: ask the merchant for a new link.');
}

/**
 * What the page checked on GET from the URL, checked again when the form is sent (the token
 * lives FORM_TOKEN_TTL_SECONDS): the signed URL's expiry, and a link that started requiring
 * signed amounts since refuses a form whose amount was not signed.
 */
function refuseStaleTerms(link: PaymentLink, token: FormTokenPayload, now: Date): void {
  if (token.signedExpiresAt !== null && token.signedExpiresAt * 1000 <= now.getTime()) throw signedLinkExpired();
  if (token.signedExpiresAt === null && link.requireSignedAmount && (link.amountMinor === null || token.reference !== link.reference)) {
    throw new PageError(
      400,
      'Invalid payment link',
      token.amountMinor === null
        ? 'This payment link needs an amount signed by the merchant: ask the merchant for a link to your order.'
        : 'This merchant accepts only signed amounts, and this link is not signed: ask the merchant for a new link.',
    );
  }
}

/**
 * The amount and the reference of a payment are those of the page (carried by its form token,
 * which nobody can alter without breaking its MAC). A form that sends another amount (when the
 * page fixed it) or any other reference was edited: it is refused, never silently corrected.
 */
function refuseEditedTerms(link: PaymentLink, token: FormTokenPayload, body: Record<string, unknown>): void {
  const edited = () =>
    new PageError(400, 'Invalid payment form', 'The amount or the reference of this payment was changed: it does not match the payment page. Open the payment link again.');
  if (body.reference !== undefined && (typeof body.reference !== 'string' || body.reference.trim() !== (token.reference ?? ''))) throw edited();
  if (token.amountMinor !== null && body.amount !== undefined) {
    let sent: bigint;
    try {
      sent = parseAmount(typeof body.amount === 'string' ? body.amount : undefined, link.exponent, { field: 'amount' });
    } catch (error) {
      if (error instanceof ValidationError) throw edited();
      throw error;
    }
    if (sent !== token.amountMinor) throw edited();
  }
}

/** The public customer payment page, served on PAY_PORT and addressed as PAY_URL. */
export function createPayApp(deps: PayAppDeps): Express {
  const { config, services, logger } = deps;
  const secret = config.paySecret;
  const secureCookie = config.payUrl.startsWith('https:');
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);
  app.set('etag', false);
  app.use(
    helmet({
      contentSecurityPolicy: {
        useDefaults: false,
        directives: {
          defaultSrc: ["'none'"],
          styleSrc: ["'self'"],
          imgSrc: ["'self'"],
          formAction: ["'self'"],
          frameAncestors: ["'none'"],
          baseUri: ["'none'"],
        },
      },
      referrerPolicy: { policy: 'no-referrer' },
    }),
  );

  const limiter = payPageRateLimiter(deps.rateLimitBackend, config.rateLimit, (_req, res) => {
    sendPage(res, 429, messagePage('Too many attempts', 'Too many requests from your network. Wait a minute, then try again.'));
  });

  app.get('/pay/assets/pay.css', (_req, res) => {
    res.type('text/css').setHeader('Cache-Control', 'public, max-age=3600');
    res.send(PAY_CSS);
  });

  // Browsers ask for it on every page: answer without an error (and without a body).
  app.get('/favicon.ico', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=86400');
    res.status(204).end();
  });

  app.use('/pay', limiter);

  /**
   * The browser id the form token is bound to, (re)set on every page view so the cookie lives
   * as long as the newest form it protects. SameSite=Lax, not Strict: a customer who follows
   * the integrator's link, or is redirected back by a GET from an approval page, arrives by a
   * top-level cross-site navigation, which Strict would strip (the page would then mint a new
   * id and orphan the form the customer already has). A cross-site POST return (some 3-D
   * Secure flows) carries no Lax cookie either: such a return would need its own token. CSRF
   * is still refused: the form token binds this id and is only on the page, which another site
   * cannot read, and Lax withholds the cookie from cross-site POSTs.
   */
  function browserId(req: Request, res: Response): string {
    const existing = readCookie(req, BROWSER_COOKIE);
    const id = existing && BROWSER_ID.test(existing) ? existing : crypto.randomBytes(18).toString('base64url');
    res.cookie(BROWSER_COOKIE, id, { httpOnly: true, sameSite: 'lax', secure: secureCookie, path: '/pay', maxAge: FORM_TOKEN_TTL_SECONDS * 1000 });
    return id;
  }

  function codeOf(req: Request): string {
    const code = String(req.params.code ?? '');
    if (!isLinkCode(code)) throw new PaymentRefused('unknown_link', 'This payment link does not exist. Check the address you were given.');
    return code;
  }

  // Showing the page is safe: it reads the link and validates the URL, nothing more. Whether
  // the order (reference) is already paid or being paid is checked by the POST only, inside the
  // payment's transaction: a GET neither reveals the payments of a reference nor changes any.
  app.get('/pay/:code', async (req, res) => {
    const link = await services.payments.payableLink(codeOf(req));
    const { amountMinor, reference, signedExpiresAt } = resolveTerms(req, link, secret, new Date());
    const token = issueFormToken(secret, {
      linkId: link.id,
      browserId: browserId(req, res),
      amountMinor,
      reference,
      nonce: randomNonce(),
      issuedAt: Math.floor(Date.now() / 1000),
      signedExpiresAt,
    });
    sendPage(res, 200, paymentFormPage({ link, amountMinor, reference, token, action: `/pay/${link.code}` }));
  });

  app.post('/pay/:code', express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 20 }), async (req, res) => {
    const link = await services.payments.linkForCode(codeOf(req));
    const body = (req.body ?? {}) as Record<string, unknown>;
    const token = typeof body.token === 'string' ? readFormToken(secret, body.token) : null;
    const cookie = readCookie(req, BROWSER_COOKIE);
    const age = token ? Math.floor(Date.now() / 1000) - token.issuedAt : Infinity;
    if (!token || token.linkId !== link.id || !cookie || token.browserId !== cookie || age < -60 || age > FORM_TOKEN_TTL_SECONDS) {
      throw new PageError(
        403,
        'Form expired',
        'This payment form has expired or was not sent from this page (cookies must be enabled). Open the payment link again.',
      );
    }
    refuseStaleTerms(link, token, new Date());
    refuseEditedTerms(link, token, body);
    const view: PaymentFormView = {
      link,
      amountMinor: token.amountMinor,
      reference: token.reference,
      token: body.token as string,
      action: `/pay/${link.code}`,
      values: { amount: typeof body.amount === 'string' ? body.amount.slice(0, 24) : undefined, phone: typeof body.phone === 'string' ? body.phone.slice(0, 24) : undefined },
    };
    let payment;
    try {
      let amountMinor = token.amountMinor;
      if (amountMinor === null) {
        amountMinor = parseAmount(typeof body.amount === 'string' ? body.amount : undefined, link.exponent, { field: 'amount' });
        checkAmountForLink(link, amountMinor);
      }
      const payer = readSandboxPayer(body);
      payment = await services.payments.start({ linkId: link.id, nonce: token.nonce, amountMinor, reference: token.reference, payer });
    } catch (error) {
      if (error instanceof ValidationError) {
        const fields = Array.isArray(error.details) ? error.details : [];
        sendPage(res, 400, paymentFormPage({ ...view, error: { message: fields.length ? 'Check the payment details.' : error.message, fields } }));
        return;
      }
      throw error;
    }
    res.setHeader('Cache-Control', 'no-store');
    res.redirect(303, `/pay/${link.code}/payments/${payment.id}?t=${receiptToken(secret, payment.id)}`);
  });

  app.get('/pay/:code/payments/:paymentId', async (req, res) => {
    const link = await services.payments.linkForCode(codeOf(req));
    const paymentId = String(req.params.paymentId);
    const t = queryValue(req, 't');
    if (!/^[0-9a-f-]{36}$/i.test(paymentId) || !t || !verifyReceiptToken(secret, paymentId, t)) {
      throw new PageError(404, 'Payment not found', 'This payment does not exist.');
    }
    const payment = await services.payments.forPage(link.id, paymentId);
    if (!payment) throw new PageError(404, 'Payment not found', 'This payment does not exist.');
    const retry = link.status === 'active' && link.organizationCanCollect && (link.kind === 'link' || link.amountMinor !== null) ? `/pay/${link.code}` : null;
    sendPage(res, 200, resultPage(link, payment, retry));
  });

  app.use((_req, res) => {
    sendPage(res, 404, messagePage('Page not found', 'There is no page at this address.'));
  });

  const errorPage: ErrorRequestHandler = (err: unknown, req, res, _next) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (err instanceof PageError) {
      sendPage(res, err.status, messagePage(err.title, err.message));
      return;
    }
    if (err instanceof PaymentRefused) {
      const { status, title } = REFUSAL_STATUS[err.reason];
      sendPage(res, status, messagePage(title, err.message));
      return;
    }
    if (err instanceof DomainError && err.category === 'invalid') {
      sendPage(res, 400, messagePage('Invalid request', err.message));
      return;
    }
    const e = err as { status?: number; type?: string };
    if (e?.type === 'entity.too.large' || e?.status === 413) {
      sendPage(res, 413, messagePage('Request too large', 'The form sent too much data.'));
      return;
    }
    if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) {
      sendPage(res, 400, messagePage('Invalid request', 'The request could not be understood.'));
      return;
    }
    logger.error({ err, url: req.originalUrl.split('?')[0] }, 'payment page error');
    sendPage(res, 500, messagePage('Something went wrong', 'The payment page had a problem. If you already submitted a payment, check with the merchant before paying again.'));
  };
  app.use(errorPage);
  return app;
}
