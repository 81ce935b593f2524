import crypto from 'node:crypto';

/**
 * Standard Webhooks 1.0 signatures: a secret is `whsec_` and a base64 key; the signed
 * content is `{webhook-id}.{webhook-timestamp}.{body}`; a signature is `v1,` and the base64
 * HMAC-SHA256 of it; several signatures (one per live secret) are separated by spaces.
 */
export const SECRET_PREFIX = 'whsec_';

/** A new secret: 24 random bytes (192 bits; the specification asks for 24 to 64). */
export function generateSecret(): string {
  return SECRET_PREFIX + crypto.randomBytes(24).toString('base64');
}

/** `v1,<base64>` for one secret. */
export function sign(secret: string, id: string, timestamp: number, body: string): string {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('a webhook secret starts with whsec_');
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  const mac = crypto.createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The `webhook-signature` header: one signature per secret, space-separated. */
export function signatureHeader(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  return secrets.map((secret) => sign(secret, id, timestamp, body)).join(' ');
}

/** The three Standard Webhooks headers of one attempt. */
export function webhookHeaders(secrets: readonly string[], id: string, timestamp: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, id, timestamp, body),
  };
}
