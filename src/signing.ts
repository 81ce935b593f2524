import crypto from 'node:crypto';

/**
 * The signatures of the tokens the platform hands out and must find unaltered when they come
 * back (the payment page's signed amounts and form tokens, statement cursors): HMAC-SHA256
 * under a key derived from a configured secret for one purpose only, so a signature made for
 * one purpose never verifies for another. Compare with `safeEqual` (constant time).
 */

function purposeKey(secret: string, purpose: string): Buffer {
  return crypto.createHmac('sha256', secret).update(purpose).digest();
}

/** HMAC-SHA256 of `message` under the key of `purpose` (32 bytes). */
export function purposeMacBytes(secret: string, purpose: string, message: string | Buffer): Buffer {
  return crypto.createHmac('sha256', purposeKey(secret, purpose)).update(message).digest();
}

/** The same signature as base64url text (43 characters). */
export function purposeMac(secret: string, purpose: string, message: string): string {
  return purposeMacBytes(secret, purpose, message).toString('base64url');
}

/** Constant-time equality of two signatures (false when their lengths differ). */
export function safeEqual(a: string | Buffer, b: string | Buffer): boolean {
  const left = typeof a === 'string' ? Buffer.from(a) : a;
  const right = typeof b === 'string' ? Buffer.from(b) : b;
  return left.length === right.length && crypto.timingSafeEqual(left, right);
}
