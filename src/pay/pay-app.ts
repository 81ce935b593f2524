import crypto from 'node:crypto';
import express, { type ErrorRequestHandler, type Express, type Request, type Response } from 'express';
import helmet from 'helmet';
import type { Logger } from 'pino';
import type { Config } from '../config';
import { DomainError, NotFoundError } from '../errors';
import { payPageRateLimiter, type RateLimitBackend } from '../http/rate-limit';
import { FORM_TOKEN_TTL_SECONDS, PaymentPageError, PaymentRefused, type PaymentPageProblem, type PaymentPageService } from '../modules/payment-links';
import { PAY_CSS, messagePage, paymentFormPage, resultPage } from './pay-pages';

export interface PayAppDeps {
  config: Config;
  logger: Logger;
  paymentPage: PaymentPageService;
  /** The API's rate-limit store backend (Redis when REDIS_URL is set): the page counts there too. */
  rateLimitBackend: RateLimitBackend;
}

const BROWSER_COOKIE = 'pay_bid';
const BROWSER_ID = /^[A-Za-z0-9_-]{24}$/;

/** Each refusal of the page's rules as an HTML page: its status and title. */
const REFUSAL_PAGE: Record<PaymentRefused['reason'] | PaymentPageProblem, { status: number; title: string }> = {
  unknown_link: { status: 404, title: 'Payment link not found' },
  link_inactive: { status: 410, title: 'Payment link deactivated' },
  link_expired: { status: 410, title: 'Payment link expired' },
  link_completed: { status: 410, title: 'Payment link already paid' },
  link_busy: { status: 409, title: 'Payment in progress' },
  reference_paid: { status: 409, title: 'Order already paid' },
  account_unavailable: { status: 409, title: 'Payments unavailable' },
  merchant_unavailable: { status: 410, title: 'Payments unavailable' },
  invalid_link: { status: 400, title: 'Invalid payment link' },
  invalid_form: { status: 400, title: 'Invalid payment form' },
  form_expired: { status: 403, title: 'Form expired' },
  signed_link_expired: { status: 410, title: 'Payment link expired' },
  payment_not_found: { status: 404, title: 'Payment not found' },
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

/** The page's own Content-Security-Policy and referrer policy: nothing but itself. */
function securityHeaders() {
  return helmet({
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
  });
}

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
function browserId(req: Request, res: Response, secureCookie: boolean): string {
  const existing = readCookie(req, BROWSER_COOKIE);
  const id = existing && BROWSER_ID.test(existing) ? existing : crypto.randomBytes(18).toString('base64url');
  res.cookie(BROWSER_COOKIE, id, { httpOnly: true, sameSite: 'lax', secure: secureCookie, path: '/pay', maxAge: FORM_TOKEN_TTL_SECONDS * 1000 });
  return id;
}

/** The stylesheet and the favicon: static, cacheable, outside the page's rate limit. */
function mountAssets(app: Express): void {
  app.get('/pay/assets/pay.css', (_req, res) => {
    res.type('text/css').setHeader('Cache-Control', 'public, max-age=3600');
    res.send(PAY_CSS);
  });

  // Browsers ask for it on every page: answer without an error (and without a body).
  app.get('/favicon.ico', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=86400');
    res.status(204).end();
  });
}

/** The form, its submission and the receipt. */
function mountPaymentPages(app: Express, paymentPage: PaymentPageService, secureCookie: boolean): void {
  // Showing the page is safe: it reads the link and validates the URL, nothing more. Whether
  // the order (reference) is already paid or being paid is checked by the POST only, inside the
  // payment's transaction: a GET neither reveals the payments of a reference nor changes any.
  app.get('/pay/:code', async (req, res) => {
    const code = String(req.params.code ?? '');
    const form = await paymentPage.open(code, req.query as Record<string, unknown>, () => browserId(req, res, secureCookie));
    sendPage(res, 200, paymentFormPage({ ...form, action: `/pay/${form.link.code}` }));
  });

  app.post('/pay/:code', express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 20 }), async (req, res) => {
    const form = (req.body ?? {}) as Record<string, unknown>;
    const outcome = await paymentPage.submit(String(req.params.code ?? ''), form, readCookie(req, BROWSER_COOKIE));
    if (outcome.kind === 'invalid') {
      sendPage(res, 400, paymentFormPage({ ...outcome.form, action: `/pay/${outcome.form.link.code}` }));
      return;
    }
    res.setHeader('Cache-Control', 'no-store');
    res.redirect(303, `/pay/${outcome.link.code}/payments/${outcome.payment.id}?t=${outcome.receiptToken}`);
  });

  app.get('/pay/:code/payments/:paymentId', async (req, res) => {
    const receipt = await paymentPage.receipt(String(req.params.code ?? ''), String(req.params.paymentId), (req.query as Record<string, unknown>).t);
    sendPage(res, 200, resultPage(receipt.link, receipt.payment, receipt.canRetry ? `/pay/${receipt.link.code}` : null));
  });
}

/** Every error as an HTML page: a refusal of the page's rules by its own status, anything unforeseen as 500 (logged). */
function errorPage(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (err instanceof PaymentRefused || err instanceof PaymentPageError) {
      const { status, title } = REFUSAL_PAGE[err instanceof PaymentRefused ? err.reason : err.problem];
      sendPage(res, status, messagePage(title, err.message));
      return;
    }
    if (err instanceof DomainError && (err.category === 'rate_limited' || err.category === 'not_found')) {
      for (const [name, value] of Object.entries(err.headers ?? {})) res.setHeader(name, value);
      if (err.category === 'rate_limited') sendPage(res, 429, messagePage('Too many attempts', err.message));
      else sendPage(res, 404, messagePage('Page not found', err.message));
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
}

/** The public customer payment page, served on PAY_PORT and addressed as PAY_URL: HTTP and HTML only, its rules are PaymentPageService's. */
export function createPayApp(deps: PayAppDeps): Express {
  const { config, paymentPage, logger } = deps;
  const secureCookie = config.payUrl.startsWith('https:');
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);
  app.set('etag', false);
  app.use(securityHeaders());

  const limiter = payPageRateLimiter(deps.rateLimitBackend, config.rateLimit);
  mountAssets(app);
  app.use('/pay', limiter);
  mountPaymentPages(app, paymentPage, secureCookie);

  app.use((_req, _res, next) => next(new NotFoundError('There is no page at this address.')));
  app.use(errorPage(logger));
  return app;
}
