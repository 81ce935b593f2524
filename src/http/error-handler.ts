import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { DomainError, NotFoundError, type ErrorCategory, type ErrorDetails, type FieldIssue } from '../errors';
import { operationMatcher } from './operation-matcher';
import { isConnectionLoss } from '../db/transaction';

const STATUS_BY_CATEGORY: Record<ErrorCategory, number> = {
  invalid: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  gone: 410,
  too_large: 413,
  unprocessable: 422,
  locked: 423,
  rate_limited: 429,
  not_implemented: 501,
  unavailable: 503,
};

/** Error names for the statuses the validator, the body parser and Express raise themselves. */
const CODE_BY_STATUS: Record<number, string> = {
  400: 'ValidationError',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType',
};

/** Retry-After of a 503 when no database connection was free in time. */
export const POOL_EXHAUSTED_RETRY_AFTER_SECONDS = 2;

/**
 * No database connection could be had in time (knex's acquire timeout), or PostgreSQL refused
 * a new one: the service is overloaded, not broken, so the client may retry.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { name?: unknown; code?: unknown } | null;
  return e?.name === 'KnexTimeoutError' || e?.code === '53300' || e?.code === '57P03';
}

interface ErrorBody {
  success: false;
  error: string;
  message: string;
  details?: ErrorDetails;
}

interface HttpLikeError {
  status?: number;
  statusCode?: number;
  type?: string;
  charset?: string;
  message?: string;
  headers?: Record<string, string>;
  errors?: Array<{ path?: string; message?: string }>;
}

/** '/body/amount' -> 'body.amount'; '.query.limit' -> 'query.limit'. */
function fieldName(path: string | undefined): string {
  if (!path) return 'request';
  return path.replace(/^[./]+/, '').replace(/[/]/g, '.') || 'request';
}

function validatorDetails(errors: HttpLikeError['errors']): FieldIssue[] | undefined {
  if (!errors?.length) return undefined;
  return errors.slice(0, 100).map((e) => ({ field: fieldName(e.path), message: e.message ?? 'is invalid' }));
}

function messageFor(status: number, raw: string | undefined): string {
  switch (status) {
    case 401:
      return raw && !/^unauthorized$/i.test(raw) ? raw : 'Authentication is required: send a valid bearer access token.';
    case 404:
      return 'The requested resource does not exist.';
    case 405:
      return raw ?? 'This method is not allowed on this path.';
    case 413:
      return 'The request body is larger than the limit.';
    case 415:
      return 'Unsupported content type: send application/json.';
    default:
      return raw ?? 'The request is invalid.';
  }
}

/** The status an operation wants for its validation errors, or undefined for the usual 400. */
export type ValidationStatusLookup = (req: { method: string; path: string; openapi?: unknown }) => number | undefined;

function declaredValidationStatus(operation: unknown): number | undefined {
  const value = (operation as Record<string, unknown> | undefined)?.['x-validation-error-status'];
  return value === 422 ? value : undefined;
}

/**
 * The status an operation wants for its validation errors instead of 400, declared in the
 * contract with the vendor extension `x-validation-error-status` (for example 422 on
 * updateNetworkStatus, as the spec requires). Read from the operation the validator matched,
 * so no handler special-cases it. A request that never reached the validator (a body that is
 * not JSON fails in the body parser, before it) is matched against the contract's paths here,
 * so the operation's status applies to it as well.
 */
export function validationStatusLookup(document: Record<string, unknown>, basePath = '/api'): ValidationStatusLookup {
  const match = operationMatcher(document, basePath);
  return (req) => {
    const matched = (req.openapi as { schema?: unknown } | undefined)?.schema;
    return declaredValidationStatus(matched ?? match(req.method, req.path));
  };
}

/** A path no route answers: a NotFoundError, which the error handler writes (404 NotFound). */
export function notFoundHandler(): RequestHandler {
  return (_req, _res, next) => {
    next(new NotFoundError('The requested resource does not exist.'));
  };
}

/**
 * The only writer of error responses: domain errors (the rate limiters' 429 and 503, unknown
 * paths, refusals of the services), validator and parser errors, the rest as 500. Headers a
 * middleware put on the response before failing (the limiters' RateLimit and Retry-After) stay.
 */
export function errorHandler(logger: Logger, validationStatus: ValidationStatusLookup = () => undefined): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    if (res.headersSent) {
      req.log?.error({ err }, 'error after the response started');
      res.destroy();
      return;
    }
    let status: number;
    let body: ErrorBody;
    let headers: Record<string, string> | undefined;

    if (err instanceof DomainError) {
      status = STATUS_BY_CATEGORY[err.category];
      body = { success: false, error: err.code, message: err.message };
      if (err.details) body.details = err.details;
      headers = err.headers;
    } else if (isDatabaseUnavailable(err)) {
      status = 503;
      body = { success: false, error: 'ServiceUnavailable', message: 'The service is overloaded: retry after the time in Retry-After.' };
      headers = { 'Retry-After': String(POOL_EXHAUSTED_RETRY_AFTER_SECONDS) };
      (req.log ?? logger).warn({ err }, 'no database connection available');
    } else if (isConnectionLoss(err)) {
      // The connection died under the request (a terminated backend, a failover): the work may
      // or may not have committed, so the client retries with the same Idempotency-Key, which
      // replays a committed outcome instead of repeating it.
      status = 503;
      body = { success: false, error: 'ServiceUnavailable', message: 'The database connection was lost during the request: retry after the time in Retry-After with the same Idempotency-Key, which replays the outcome if it was recorded.' };
      headers = { 'Retry-After': String(POOL_EXHAUSTED_RETRY_AFTER_SECONDS) };
      (req.log ?? logger).warn({ err }, 'database connection lost during the request');
    } else {
      const e = (err ?? {}) as HttpLikeError;
      const raw = e.status ?? e.statusCode;
      const isResponseValidation = raw === 500 && Array.isArray(e.errors) && e.errors.some((x) => x.path?.startsWith('/response'));
      if (e.type === 'entity.parse.failed') {
        status = 400;
        body = { success: false, error: 'ValidationError', message: 'The request body is not valid JSON.', details: [{ field: 'body', message: 'malformed JSON' }] };
      } else if (typeof raw === 'number' && raw >= 400 && raw < 500 && CODE_BY_STATUS[raw]) {
        status = raw;
        body = { success: false, error: CODE_BY_STATUS[raw] as string, message: messageFor(raw, e.message) };
        if (e.type === 'charset.unsupported') {
          body.message = `The charset ${JSON.stringify(String(e.charset ?? '').slice(0, 40))} is not supported: send JSON in UTF-8 (application/json, or application/json; charset=utf-8).`;
        }
        const details = status === 400 ? validatorDetails(e.errors) : undefined;
        if (details) body.details = details;
        headers = e.headers;
        if (status === 401) headers = { ...headers, 'WWW-Authenticate': 'Bearer realm="api"' };
      } else {
        status = 500;
        body = { success: false, error: 'InternalError', message: 'An unexpected error occurred. Quote the X-Request-Id header when contacting support.' };
        (req.log ?? logger).error({ err, contractDrift: isResponseValidation || undefined }, 'unhandled error');
      }
    }
    if (status === 400 && body.error === 'ValidationError') status = validationStatus(req) ?? status;
    if (status === 401 && !headers?.['WWW-Authenticate']) headers = { ...headers, 'WWW-Authenticate': 'Bearer realm="api"' };
    for (const [name, value] of Object.entries(headers ?? {})) res.setHeader(name, value);
    res.status(status).json(body);
  };
}
