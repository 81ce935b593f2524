// Webhook verification (Standard Webhooks 1.0: headers `webhook-id`, `webhook-timestamp`,
// `webhook-signature` = `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, secret
// `whsec_<base64>`), by the `standardwebhooks` package. Verify the raw body as received, before
// any JSON parsing, and dedupe deliveries by `webhook-id` (a retry carries the same id).
import { Webhook, WebhookVerificationError } from 'standardwebhooks';

export { WebhookVerificationError };

export interface VerifiedWebhook<T = unknown> {
  /** `webhook-id`: the event id, the same on every retry of it (dedupe on it). */
  id: string;
  timestamp: Date;
  payload: T;
}

type Headers = Record<string, string | string[] | undefined> | globalThis.Headers;

function header(headers: Headers, name: string): string {
  const value = headers instanceof globalThis.Headers ? headers.get(name) : headers[name] ?? headers[name.toLowerCase()];
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) throw new WebhookVerificationError(`Missing required header ${name}`);
  return text;
}

/**
 * The event when the signature is valid for one of `secrets` (several during a rotation) and
 * its timestamp within the tolerance (5 minutes); throws WebhookVerificationError otherwise.
 */
export function verifyWebhook<T = unknown>(rawBody: string | Buffer, headers: Headers, secrets: string | string[]): VerifiedWebhook<T> {
  const body = typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8');
  const wanted = { 'webhook-id': header(headers, 'webhook-id'), 'webhook-timestamp': header(headers, 'webhook-timestamp'), 'webhook-signature': header(headers, 'webhook-signature') };
  let lastError: unknown = new WebhookVerificationError('No secret given');
  for (const secret of Array.isArray(secrets) ? secrets : [secrets]) {
    try {
      const payload = new Webhook(secret).verify(body, wanted) as T;
      return { id: wanted['webhook-id'], timestamp: new Date(Number(wanted['webhook-timestamp']) * 1000), payload };
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}
