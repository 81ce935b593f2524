/**
 * The stored form of a key's secret, pure: HMAC-SHA256 under the server's pepper
 * (API_KEY_PEPPER) over the public id and the secret. Without the pepper a stolen table
 * cannot even be used to test guesses offline. Compared in constant time.
 */
import crypto from 'node:crypto';

const STORED_HASH = /^[0-9a-f]{64}$/;

/** The hex HMAC stored for a key's secret. */
export function hashApiKeySecret(pepper: string, publicId: string, secret: string): string {
  return crypto.createHmac('sha256', pepper).update(`${publicId}.${secret}`).digest('hex');
}

/** Whether `secret` is the one whose hash is `storedHex`, compared in constant time. */
export function apiKeySecretMatches(pepper: string, publicId: string, secret: string, storedHex: string): boolean {
  // The stored value is the server's own data: its shape may be checked in the open.
  if (!STORED_HASH.test(storedHex)) return false;
  return crypto.timingSafeEqual(Buffer.from(hashApiKeySecret(pepper, publicId, secret), 'hex'), Buffer.from(storedHex, 'hex'));
}
