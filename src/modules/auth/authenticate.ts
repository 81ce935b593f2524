import crypto from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import type { Knex } from 'knex';
import passport from 'passport';
import { ExtractJwt, Strategy as JwtStrategy, type VerifiedCallback } from 'passport-jwt';
import type { Config } from '../../config';
import { prepared } from '../../db/prepared';
import type { AuthContext } from '../../http/request-context';
import { ACCESS_TOKEN_ALGORITHM, ACCESS_TOKEN_CLOCK_TOLERANCE_SECONDS, accessTokenTimeProblem } from './token-service';

interface JwtPayload {
  sub?: string;
  sid?: string;
  adm?: boolean;
  exp?: number;
  iat?: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Operations that check the session themselves, in the same database statement as their
 * effect (POST /transfers: `transfer_create` refuses a revoked or expired session and a user
 * who is not active, with the same 401s): for them the token is verified here but the session
 * is not looked up a second time. Each MUST hand `req.auth.sessionId` to its statement.
 */
export const SESSION_CHECKED_BY_OPERATION: ReadonlyArray<{ method: string; path: string }> = [{ method: 'POST', path: '/api/transfers' }];

function checksSessionItself(req: Request): boolean {
  return SESSION_CHECKED_BY_OPERATION.some((operation) => operation.method === req.method && operation.path === req.originalUrl.split('?')[0]);
}

/**
 * passport-jwt checks the signature with the algorithm pinned, the issuer, the audience and
 * the expiry; then the session must still be live in the database, so a logout or a
 * revoked session refuses the token at once rather than when the JWT expires (checked here,
 * or by the operation's own statement: SESSION_CHECKED_BY_OPERATION).
 */
export function createJwtStrategy(knex: Knex, jwtConfig: Config['jwt'], verified = new VerifiedTokens()): JwtStrategy {
  const extract = ExtractJwt.fromAuthHeaderAsBearerToken();
  return new JwtStrategy(
    {
      jwtFromRequest: extract,
      // A KeyObject: given a string, jsonwebtoken first tries (and fails) to parse a PEM public key on every verify.
      secretOrKey: crypto.createSecretKey(Buffer.from(jwtConfig.secret)) as unknown as string,
      algorithms: [ACCESS_TOKEN_ALGORITHM],
      issuer: jwtConfig.issuer,
      audience: jwtConfig.audience,
      jsonWebTokenOptions: { clockTolerance: ACCESS_TOKEN_CLOCK_TOLERANCE_SECONDS },
      passReqToCallback: true,
    },
    (req: Request, payload: JwtPayload, done: VerifiedCallback) => {
      const token = extract(req);
      if (token) verified.remember(token, payload);
      checkSession(knex, req, payload, done, jwtConfig.accessTtlSeconds);
    },
  );
}

/**
 * Tokens whose signature and claims already passed, until their expiry: verifying is
 * cryptography that gives the same answer for the same string. Only the verification is
 * remembered: the session is still checked on every request (here, or by the operation's
 * own statement), so a logout or a revoked session refuses the token at once.
 */
export class VerifiedTokens {
  private readonly payloads = new Map<string, { payload: JwtPayload; expiresAtMs: number }>();

  constructor(private readonly capacity = 10_000) {}

  remember(token: string, payload: JwtPayload): void {
    if (typeof payload.exp !== 'number') return;
    if (this.payloads.size >= this.capacity) this.payloads.delete(this.payloads.keys().next().value as string);
    this.payloads.set(token, { payload, expiresAtMs: payload.exp * 1000 });
  }

  recall(token: string, nowMs = Date.now()): JwtPayload | undefined {
    const entry = this.payloads.get(token);
    if (!entry) return undefined;
    if (entry.expiresAtMs <= nowMs) {
      this.payloads.delete(token);
      return undefined;
    }
    return entry.payload;
  }
}

function checkSession(knex: Knex, req: Request, payload: JwtPayload, done: VerifiedCallback, accessTtlSeconds: number): void {
  if (!payload.sub || !payload.sid || !UUID.test(payload.sub) || !UUID.test(payload.sid)) {
    done(null, false, { message: 'The access token is malformed.' });
    return;
  }
  const timeProblem = accessTokenTimeProblem(payload, accessTtlSeconds);
  if (timeProblem) {
    done(null, false, { message: timeProblem });
    return;
  }
  if (checksSessionItself(req)) {
    done(null, { userId: payload.sub, sessionId: payload.sid, isAdmin: payload.adm === true } satisfies AuthContext);
    return;
  }
  prepared(
    'auth_session_lookup',
    knex('sessions as s')
      .join('users as u', 'u.id', 's.user_id')
      .where('s.id', payload.sid)
      .andWhere('s.user_id', payload.sub)
      .first('s.id', 's.revoked_at', 's.expires_at', 'u.status', 'u.is_admin'),
  )
    .then((row: { id: string; revoked_at: Date | null; expires_at: Date; status: string; is_admin: boolean } | undefined) => {
      if (!row || row.revoked_at || row.expires_at.getTime() <= Date.now()) {
        done(null, false, { message: 'The session has ended: log in again.' });
      } else if (row.status !== 'active') {
        // An operator's lock ('locked') or a disabled account ends live sessions at once.
        done(null, false, { message: `The account is ${row.status}.` });
      } else {
        const auth: AuthContext = { userId: payload.sub as string, sessionId: row.id, isAdmin: row.is_admin };
        done(null, auth);
      }
    })
    .catch((error: unknown) => done(error, false));
}

const BEARER = /^bearer\s+(\S+)$/i;

/**
 * Runs on every API request: a valid bearer token sets `req.auth`; an invalid one records
 * why in `req.authFailure`. Whether a route requires a token is the contract's business
 * (the validator's `bearerAuth` security handler), so no route can forget it.
 */
export function authenticate(knex: Knex, jwtConfig: Config['jwt']): RequestHandler {
  const verified = new VerifiedTokens();
  const authenticator = new passport.Passport();
  authenticator.use('jwt', createJwtStrategy(knex, jwtConfig, verified));
  return (req, res, next) => {
    const header = req.headers.authorization;
    if (!header) return next();
    const conclude = (err: unknown, user: AuthContext | false, info?: unknown) => {
      if (err) return next(err);
      if (user) req.auth = user;
      else req.authFailure = describeFailure(info);
      next();
    };
    const token = BEARER.exec(header)?.[1];
    const payload = token === undefined ? undefined : verified.recall(token);
    if (payload) checkSession(knex, req, payload, conclude as VerifiedCallback, jwtConfig.accessTtlSeconds);
    else authenticator.authenticate('jwt', { session: false }, conclude)(req, res, next);
  };
}

function describeFailure(info: unknown): string {
  const name = (info as { name?: string } | undefined)?.name;
  if (name === 'TokenExpiredError') return 'The access token has expired: refresh it or log in again.';
  if (info instanceof Error && info.message === 'No auth token') return 'The Authorization header must be "Bearer <access token>".';
  const message = (info as { message?: string } | undefined)?.message;
  if (message && /session|disabled|locked|malformed|access token (has|is|lives)/.test(message)) return message;
  return 'The access token is invalid.';
}

/** The contract's `bearerAuth` scheme: a request to an operation that declares it needs `req.auth`. */
export function bearerAuthSecurityHandler(req: { auth?: AuthContext; authFailure?: string }): true {
  if (req.auth) return true;
  const error = new Error(req.authFailure ?? 'Authentication is required: send "Authorization: Bearer <access token>".');
  (error as Error & { status: number }).status = 401;
  throw error;
}
