import crypto from 'node:crypto';
import { purposeMac, safeEqual } from '../../signing';

/**
 * The secrets of the payment links: unguessable codes, signed amounts and the payment page's
 * form tokens. Every signature is an HMAC-SHA256 under a key derived from PAY_SECRET for one
 * purpose only, compared in constant time (see src/signing.ts).
 */

/** 24 random bytes (192 bits) as base64url: 32 URL-safe characters. */
export function generateLinkCode(): string {
  return crypto.randomBytes(24).toString('base64url');
}

const LINK_CODE = /^[A-Za-z0-9_-]{22,64}$/;

export function isLinkCode(value: string): boolean {
  return LINK_CODE.test(value);
}

export function randomNonce(): string {
  return crypto.randomBytes(18).toString('base64url');
}

/** The purposes are namespaced `payment-links/<purpose>` (the keys of signatures already issued). */
function mac(secret: string, purpose: string, message: string): string {
  return purposeMac(secret, `payment-links/${purpose}`, message);
}

export interface SignedAmount {
  linkId: string;
  amountMinor: bigint;
  reference: string;
  /** Unix seconds after which the signed URL is refused. */
  expiresAt: number;
}

function signedAmountMessage(input: SignedAmount): string {
  return JSON.stringify(['v1', input.linkId, input.amountMinor.toString(), input.reference, input.expiresAt]);
}

/** The `sig` of a signed link_with_amount: covers the link, the amount, the reference and the expiry. */
export function signAmount(secret: string, input: SignedAmount): string {
  return mac(secret, 'signed-amount', signedAmountMessage(input));
}

export function verifyAmountSignature(secret: string, input: SignedAmount, sig: string): boolean {
  return safeEqual(signAmount(secret, input), sig);
}

/**
 * The payment form's token: CSRF protection and idempotency key at once. It binds the link,
 * the browser (a random id kept in a SameSite=Lax cookie, refreshed on each page view), the amount (null when the
 * customer types it), the reference and a nonce; the nonce is the payment's idempotency key.
 */
export interface FormTokenPayload {
  linkId: string;
  browserId: string;
  amountMinor: bigint | null;
  reference: string | null;
  nonce: string;
  /** Unix seconds. */
  issuedAt: number;
  /**
   * The `exp` (Unix seconds) of the signed URL the page was opened with, null when it was not
   * signed: the form is refused once it passes, and a link that now requires signed amounts
   * refuses a form that was not opened from a signed URL.
   */
  signedExpiresAt: number | null;
}

interface WirePayload {
  l: string;
  b: string;
  a: string | null;
  r: string | null;
  n: string;
  t: number;
  e?: number | null;
}

export function issueFormToken(secret: string, payload: FormTokenPayload): string {
  const wire: WirePayload = {
    l: payload.linkId,
    b: payload.browserId,
    a: payload.amountMinor === null ? null : payload.amountMinor.toString(),
    r: payload.reference,
    n: payload.nonce,
    t: payload.issuedAt,
    e: payload.signedExpiresAt,
  };
  const body = Buffer.from(JSON.stringify(wire)).toString('base64url');
  return `${body}.${mac(secret, 'form-token', body)}`;
}

/** The payload of a genuine token, or null when it was forged, altered or is malformed. */
export function readFormToken(secret: string, token: string): FormTokenPayload | null {
  if (typeof token !== 'string' || token.length > 2048) return null;
  const [body, signature, extra] = token.split('.');
  if (!body || !signature || extra !== undefined) return null;
  if (!safeEqual(mac(secret, 'form-token', body), signature)) return null;
  try {
    const wire = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as WirePayload;
    if (typeof wire.l !== 'string' || typeof wire.b !== 'string' || typeof wire.n !== 'string' || typeof wire.t !== 'number') return null;
    if (wire.a !== null && !/^[1-9][0-9]{0,18}$/.test(wire.a)) return null;
    if (wire.e !== undefined && wire.e !== null && !Number.isSafeInteger(wire.e)) return null;
    return {
      linkId: wire.l,
      browserId: wire.b,
      amountMinor: wire.a === null ? null : BigInt(wire.a),
      reference: wire.r ?? null,
      nonce: wire.n,
      issuedAt: wire.t,
      signedExpiresAt: wire.e ?? null,
    };
  } catch {
    return null;
  }
}

/** The token of a payment's result page URL, so payment ids alone reveal nothing. */
export function receiptToken(secret: string, paymentId: string): string {
  return mac(secret, 'receipt', paymentId);
}

export function verifyReceiptToken(secret: string, paymentId: string, token: string): boolean {
  return typeof token === 'string' && safeEqual(receiptToken(secret, paymentId), token);
}
