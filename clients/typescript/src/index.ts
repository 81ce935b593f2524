// Typed client of the platform API for partner teams: openapi-fetch over the contract's
// generated types (src/openapi-types.ts, copied from generated/openapi.d.ts at build time).
//
//   const api = createPlatformClient({ baseUrl: 'http://localhost:8080/api', auth: { accessToken } });
//   const { data, error } = await api.POST('/transfers', { body: { amount: 1500, currency: 'XOF', recipientIdentifier: 'a@b.example' } });
//
// Every POST carries an Idempotency-Key (the caller's, or one the client makes), and a retry
// after a lost answer, a 5xx, a 429 or a 409 ConcurrentOperation sends the same request with
// the same key, so the operation happens at most once however often it is retried.
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './openapi-types';

export type { paths, components, operations } from './openapi-types';
export { verifyWebhook, WebhookVerificationError, type VerifiedWebhook } from './webhooks';

/** A session's access token (POST /auth/login) or an API key (`sk_...`): both are bearer tokens. */
export type Auth = { accessToken: string } | { apiKey: string } | { getToken: () => string | Promise<string> };

export interface RetryOptions {
  /** Tries in all, the first included (default 4). */
  attempts?: number;
  /** The first pause in ms, doubled each time, capped by maxDelayMs (defaults 200 and 5000); a Retry-After wins when longer. */
  baseDelayMs?: number;
  maxDelayMs?: number;
}

export interface PlatformClientOptions {
  /** The API's base URL including `/api`, e.g. `https://api.example.com/api`. */
  baseUrl: string;
  auth?: Auth;
  retry?: RetryOptions;
  /** A fetch to use instead of the global one (tests, proxies). */
  fetch?: typeof fetch;
  /** Makes the Idempotency-Key of a POST that has none (default: crypto.randomUUID). */
  idempotencyKey?: () => string;
}

export type PlatformClient = Client<paths>;

const RETRY_STATUSES = new Set([429, 500, 502, 503, 504]);

function retryAfterMs(response: Response): number {
  const value = response.headers.get('retry-after');
  if (!value) return 0;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? 0 : Math.max(0, date - Date.now());
}

async function isConcurrentOperation(response: Response): Promise<boolean> {
  if (response.status !== 409) return false;
  try {
    const body = (await response.clone().json()) as { error?: string };
    return body.error === 'ConcurrentOperation';
  } catch {
    return false;
  }
}

/**
 * A fetch that retries: GETs always, other methods only when they carry an Idempotency-Key
 * (the same key on every try, so the server answers a retry of a finished operation with the
 * first outcome or 409 IdempotencyKeyAlreadyProcessed, never a second effect).
 */
export function retryingFetch(inner: typeof fetch, options: RetryOptions = {}): typeof fetch {
  const attempts = options.attempts ?? 4;
  const base = options.baseDelayMs ?? 200;
  const max = options.maxDelayMs ?? 5000;
  return async (input, init) => {
    const request = new Request(input, init);
    const retryable = request.method === 'GET' || request.method === 'HEAD' || request.headers.has('idempotency-key');
    const body = request.body ? await request.arrayBuffer() : undefined;
    let lastError: unknown;
    for (let attempt = 1; attempt <= attempts; attempt += 1) {
      try {
        const response = await inner(new Request(request.url, { method: request.method, headers: request.headers, body, signal: request.signal }));
        const again = retryable && attempt < attempts && (RETRY_STATUSES.has(response.status) || (await isConcurrentOperation(response)));
        if (!again) return response;
        await sleep(Math.max(retryAfterMs(response), Math.min(max, base * 2 ** (attempt - 1))));
      } catch (error) {
        lastError = error;
        if (!retryable || attempt === attempts) throw error;
        await sleep(Math.min(max, base * 2 ** (attempt - 1)));
      }
    }
    throw lastError;
  };
}

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  const makeKey = options.idempotencyKey ?? (() => crypto.randomUUID());
  const client = createClient<paths>({ baseUrl: options.baseUrl, fetch: retryingFetch(options.fetch ?? globalThis.fetch, options.retry) });
  client.use({
    async onRequest({ request }) {
      const auth = options.auth;
      if (auth && !request.headers.has('authorization')) {
        const token = 'accessToken' in auth ? auth.accessToken : 'apiKey' in auth ? auth.apiKey : await auth.getToken();
        request.headers.set('authorization', `Bearer ${token}`);
      }
      if (request.method === 'POST' && !request.headers.has('idempotency-key')) request.headers.set('idempotency-key', makeKey());
      return request;
    },
  });
  return client;
}

/** Logs in and returns a client on that session, with the tokens (refresh with POST /auth/refresh). */
export async function login(baseUrl: string, identifier: string, password: string, options: Omit<PlatformClientOptions, 'baseUrl' | 'auth'> = {}) {
  const anonymous = createPlatformClient({ ...options, baseUrl });
  const { data, error, response } = await anonymous.POST('/auth/login', { body: { identifier, password } });
  if (!data) throw new Error(`login failed: ${response.status} ${error ? JSON.stringify(error) : ''}`);
  return { client: createPlatformClient({ ...options, baseUrl, auth: { accessToken: data.data.access_token } }), session: data.data };
}
