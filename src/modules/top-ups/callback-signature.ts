import crypto from 'node:crypto';
import { UnauthorizedError } from '../../errors';
import { sign } from '../events';

/**
 * The check of a rail's signed callback (Standard Webhooks, as our own webhooks are signed):
 * `webhook-signature` holds one or more `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`
 * separated by spaces, one of which must be the rail's secret's over the raw body as received;
 * `webhook-timestamp` (Unix seconds) must be within five minutes of now, either way, so a
 * captured callback cannot be sent again later (a replay within the window is refused by its
 * `webhook-id`, which the caller records).
 */
export const CALLBACK_TOLERANCE_SECONDS = 300;

export interface CallbackHeaders {
  id: string | undefined;
  timestamp: string | undefined;
  signature: string | undefined;
}

/** 401: the callback's signature is missing or is not the rail's. */
export class InvalidSignatureError extends UnauthorizedError {
  constructor() {
    super('The webhook-signature header is missing or does not match the body signed with the rail secret.', 'InvalidSignature');
  }
}

/** 401: the callback's timestamp is more than five minutes from now. */
export class CallbackTimestampOutOfToleranceError extends UnauthorizedError {
  constructor() {
    super(`The webhook-timestamp is more than ${CALLBACK_TOLERANCE_SECONDS} seconds from now: the callback is refused.`, 'CallbackTimestampOutOfTolerance');
  }
}

/** Equal bytes, in time independent of where they differ. */
function sameSignature(expected: string, candidate: string): boolean {
  const a = Buffer.from(expected);
  const b = Buffer.from(candidate);
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

/**
 * Verifies a callback; answers its `webhook-id` when the signature is the secret's and the
 * timestamp is recent. The signature is checked first: an unsigned request learns nothing of
 * the clock. `now` is in milliseconds.
 */
export function verifyCallback(secret: string, headers: CallbackHeaders, rawBody: string, now: number): string {
  const { id, timestamp, signature } = headers;
  if (!id || !timestamp || !signature || !/^[0-9]{1,12}$/.test(timestamp)) throw new InvalidSignatureError();
  const expected = sign(secret, id, Number(timestamp), rawBody);
  // `expected` is `v1,<mac>`: a signature of any other scheme never equals it, so is ignored.
  if (!signature.split(' ').some((candidate) => sameSignature(expected, candidate))) throw new InvalidSignatureError();
  if (Math.abs(now / 1000 - Number(timestamp)) > CALLBACK_TOLERANCE_SECONDS) throw new CallbackTimestampOutOfToleranceError();
  return id;
}
