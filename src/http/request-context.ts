import crypto from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { AuthorizedOrganization, Caller } from '../contract';

/** The authenticated caller set by the authenticate middleware. */
export type AuthContext = Caller;

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by the authenticate middleware when a valid bearer token was presented. */
    auth?: AuthContext;
    /** Why a presented bearer token was refused; reported only on routes that need one. */
    authFailure?: string;
    /** Set on Business routes once the operation's x-access rule let the caller through. */
    organization?: AuthorizedOrganization;
  }
}

/**
 * A caller's X-Request-Id is echoed when it is 8 to 64 letters, digits, `.`, `:` or `-`
 * (starting with a letter or digit). Ids this service makes contain `_` (`req_<uuid>`, the
 * seed's `seed_...`), which a caller's id never does, so a caller can never pass a request
 * off as another one in the logs or in audit records (network-status history).
 */
export const CALLER_REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9.:-]{7,63}$/;

/** The caller's X-Request-Id when it is acceptable, otherwise a new one. */
export function requestIdFor(req: IncomingMessage): string {
  const supplied = req.headers['x-request-id'];
  if (typeof supplied === 'string' && CALLER_REQUEST_ID.test(supplied)) return supplied;
  return `req_${crypto.randomUUID()}`;
}

/** The contract operation express-openapi-validator matched for this request, if any. */
export function contractOperation(req: unknown): { operationId: string; pathParams: Record<string, string> } | undefined {
  const openapi = (req as { openapi?: { schema?: { operationId?: string }; pathParams?: Record<string, string> } }).openapi;
  const operationId = openapi?.schema?.operationId;
  return operationId ? { operationId, pathParams: openapi?.pathParams ?? {} } : undefined;
}
