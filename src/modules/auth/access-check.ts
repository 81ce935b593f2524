import type { Knex } from 'knex';
import type { Caller } from '../../contract';
import { isUuid } from '../../ids';
import { SessionRepository } from './session-repository';
import { accessTokenTimeProblem } from './token-service';

/** The claims of an access token whose signature, algorithm, issuer, audience and expiry were verified. */
export interface AccessTokenPayload {
  sub?: string;
  sid?: string;
  adm?: boolean;
  exp?: number;
  iat?: number;
}

/** Whom a token speaks for, or why it is refused (the message of the 401). */
export type AccessDecision = { caller: Caller } | { refusal: string };

/**
 * What an access token is worth once its signature passed: its claims must be well formed and
 * its times plausible, then its session must still be live and its user active, so a logout, a
 * revoked session or an operator's lock refuses the token at once rather than when it expires.
 * Judged by the wall clock, as the signature library judges `exp`: not the services' clock.
 */
export class AccessCheck {
  constructor(
    private readonly db: Knex,
    private readonly accessTtlSeconds: number,
  ) {}

  /** The claims alone (no database): the caller they name, or why they are refused. */
  claims(payload: AccessTokenPayload): AccessDecision {
    if (!payload.sub || !payload.sid || !isUuid(payload.sub) || !isUuid(payload.sid)) return { refusal: 'The access token is malformed.' };
    const timeProblem = accessTokenTimeProblem(payload, this.accessTtlSeconds);
    if (timeProblem) return { refusal: timeProblem };
    return { caller: { userId: payload.sub, sessionId: payload.sid, isAdmin: payload.adm === true } };
  }

  /** The caller of `claims` once its session is found live and its user active (one prepared query). */
  async session(caller: Caller, nowMs = Date.now()): Promise<AccessDecision> {
    const standing = await new SessionRepository(this.db).findStanding(caller.sessionId, caller.userId);
    if (!standing || standing.revokedAt || standing.expiresAt.getTime() <= nowMs) return { refusal: 'The session has ended: log in again.' };
    // An operator's lock ('locked') or a disabled account ends live sessions at once.
    if (standing.userStatus !== 'active') return { refusal: `The account is ${standing.userStatus}.` };
    return { caller: { userId: caller.userId, sessionId: standing.id, isAdmin: standing.isAdmin } };
  }
}
