import http from 'node:http';
import https from 'node:https';
import { checkUrlSyntax, guardedLookup, type LookupAll, type UrlPolicy } from './webhook-url-guard';
import { parseRetryAfter, type AttemptResult } from './webhook-schedule';
import { webhookHeaders } from './webhook-signature';

export interface DeliveryRequest {
  url: string;
  /** The event id (`webhook-id`, the same on every retry). */
  eventId: string;
  /** The raw JSON body, signed as is. */
  body: string;
  /** Every live secret: two during a rotation. */
  secrets: readonly string[];
  timeoutMs: number;
  /** The connection (DNS and TCP) must be made within this time (at most `timeoutMs`). */
  connectTimeoutMs: number;
  policy: UrlPolicy;
  now: () => Date;
  lookupAll?: LookupAll;
}

/** Bytes of a receiver's answer read at most (the rest is dropped). */
const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * One attempt: POST the event with its Standard Webhooks headers. Success is a 2xx within
 * `timeoutMs`, the connection made within `connectTimeoutMs` (a receiver that does not even
 * accept the connection fails sooner than one that accepts and never answers); redirects are not followed (a failure); 410 is `gone`; a 429 or 503 carries its
 * Retry-After back. Never throws; never runs inside a database transaction.
 */
export function attemptDelivery(request: DeliveryRequest): Promise<AttemptResult> {
  const started = Date.now();
  const elapsed = () => Date.now() - started;
  const failed = (error: string, httpStatus: number | null = null): AttemptResult => ({ outcome: 'failed', httpStatus, error, durationMs: elapsed() });
  const checked = checkUrlSyntax(request.url, request.policy);
  if (!checked.ok) return Promise.resolve(failed(`url refused: ${checked.reason}`));
  const timestamp = Math.floor(request.now().getTime() / 1000);
  const headers = {
    ...webhookHeaders(request.secrets, request.eventId, timestamp, request.body),
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(request.body)),
    'user-agent': 'platform-webhooks/1.0',
  };
  const transport = checked.url.protocol === 'https:' ? https : http;
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const finish = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(connectTimer);
      resolve(result);
    };
    const req = transport.request(
      checked.url,
      { method: 'POST', headers, agent: false, lookup: guardedLookup(request.policy, request.lookupAll) as never },
      (res) => {
        const status = res.statusCode ?? 0;
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_RESPONSE_BYTES) res.destroy();
        });
        const done = () => {
          if (status >= 200 && status < 300) finish({ outcome: 'succeeded', httpStatus: status, error: null, durationMs: elapsed() });
          else if (status === 410) finish({ outcome: 'gone', httpStatus: status, error: 'HTTP 410 Gone: the endpoint is disabled', durationMs: elapsed() });
          else {
            const result = failed(status >= 300 && status < 400 ? `HTTP ${status}: redirects are not followed` : `HTTP ${status}`, status);
            const retryAfter = status === 429 || status === 503 ? parseRetryAfter(res.headers['retry-after'], request.now()) : undefined;
            finish(retryAfter === undefined ? result : { ...result, retryAfterSeconds: retryAfter });
          }
        };
        res.on('end', done);
        res.on('close', done);
        res.on('error', done);
      },
    );
    const timer = setTimeout(() => {
      finish(failed(`timeout after ${request.timeoutMs} ms`));
      req.destroy();
    }, request.timeoutMs);
    const connectTimer = setTimeout(() => {
      finish(failed(`connect timeout after ${request.connectTimeoutMs} ms`));
      req.destroy();
    }, request.connectTimeoutMs);
    req.on('socket', (socket) => {
      if (!socket.connecting) clearTimeout(connectTimer);
      else socket.once('connect', () => clearTimeout(connectTimer));
    });
    req.on('error', (error: NodeJS.ErrnoException) => finish(failed(error.code === 'EPRIVATEADDRESS' ? 'url refused: private_address' : `connection failed: ${error.code ?? error.message}`)));
    req.end(request.body);
  });
}
