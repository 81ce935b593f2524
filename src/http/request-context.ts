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

const ACCEPTED_REQUEST_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/** Accepts a caller's X-Request-Id when it is sane, otherwise makes one. */
export function requestIdFor(req: IncomingMessage): string {
  const supplied = req.headers['x-request-id'];
  if (typeof supplied === 'string' && ACCEPTED_REQUEST_ID.test(supplied)) return supplied;
  return crypto.randomUUID();
}
