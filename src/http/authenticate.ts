import crypto from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import passport from 'passport';
import { ExtractJwt, Strategy as JwtStrategy, type VerifiedCallback } from 'passport-jwt';
import type { Config } from '../config';
import { UnauthorizedError } from '../errors';
import { ACCESS_TOKEN_ALGORITHM, ACCESS_TOKEN_CLOCK_TOLERANCE_SECONDS, type AccessCheck, type AccessTokenPayload } from '../modules/auth';
import { looksLikeApiKey, type ApiKeyService } from '../modules/api-keys';
import { clientIp } from './rate-limit';
import type { AuthContext } from './request-context';

/**
 * passport-jwt checks the signature with the algorithm pinned, the issuer, the audience and
 * the expiry; then the auth module's AccessCheck judges the claims and the session, for every
 * operation.
 */
export function createJwtStrategy(access: AccessCheck, jwtConfig: Config['jwt'], verified = new VerifiedTokens()): JwtStrategy {
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
    (req: Request, payload: AccessTokenPayload, done: VerifiedCallback) => {
      const token = extract(req);
      if (token) verified.remember(token, payload);
      checkSession(access, payload, done);
    },
  );
}

/**
 * Tokens whose signature and claims already passed, until their expiry: verifying is
 * cryptography that gives the same answer for the same string. Only the verification is
 * remembered: the session is still checked on every request, so a logout or a revoked session
 * refuses the token at once.
 */
export class VerifiedTokens {
  private readonly payloads = new Map<string, { payload: AccessTokenPayload; expiresAtMs: number }>();

  constructor(private readonly capacity = 10_000) {}

  remember(token: string, payload: AccessTokenPayload): void {
    if (typeof payload.exp !== 'number') return;
    if (this.payloads.size >= this.capacity) this.payloads.delete(this.payloads.keys().next().value as string);
    this.payloads.set(token, { payload, expiresAtMs: payload.exp * 1000 });
  }

  recall(token: string, nowMs = Date.now()): AccessTokenPayload | undefined {
    const entry = this.payloads.get(token);
    if (!entry) return undefined;
    if (entry.expiresAtMs <= nowMs) {
      this.payloads.delete(token);
      return undefined;
    }
    return entry.payload;
  }
}

function checkSession(access: AccessCheck, payload: AccessTokenPayload, done: VerifiedCallback): void {
  const claimed = access.claims(payload);
  if ('refusal' in claimed) {
    done(null, false, { message: claimed.refusal });
    return;
  }
  access
    .session(claimed.caller)
    .then((decision) => ('refusal' in decision ? done(null, false, { message: decision.refusal }) : done(null, decision.caller satisfies AuthContext)))
    .catch((error: unknown) => done(error, false));
}

const BEARER = /^bearer\s+(\S+)$/i;

/**
 * Runs on every API request: a valid bearer token sets `req.auth`; an invalid one records
 * why in `req.authFailure`. Whether a route requires a token is the contract's business
 * (the validator's `bearerAuth` and `apiKeyAuth` security handlers), so no route can forget it.
 *
 * A bearer that starts `sk_live_` / `sk_test_` is an organisation's API key: the
 * api-keys module checks it (its checksum first, with no database work; then its row, read on
 * every request so a revocation counts from its commit) and `req.auth.apiKey` says so. Which
 * operations a key may call is the mount's business (the contract's security schemes).
 */
export function authenticate(access: AccessCheck, jwtConfig: Config['jwt'], apiKeys: ApiKeyService): RequestHandler {
  const verified = new VerifiedTokens();
  const authenticator = new passport.Passport();
  authenticator.use('jwt', createJwtStrategy(access, jwtConfig, verified));
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
    if (token !== undefined && looksLikeApiKey(token)) {
      apiKeys.authenticate(token, clientIp(req)).then((decision) => {
        if ('caller' in decision) req.auth = decision.caller satisfies AuthContext;
        else req.authFailure = decision.refusal;
        next();
      }, next);
      return;
    }
    const payload = token === undefined ? undefined : verified.recall(token);
    if (payload) checkSession(access, payload, conclude as VerifiedCallback);
    else authenticator.authenticate('jwt', { session: false }, conclude)(req, res, next);
  };
}

function describeFailure(info: unknown): string {
  const name = (info as { name?: string } | undefined)?.name;
  if (name === 'TokenExpiredError') return 'The access token has expired: refresh it or log in again.';
  if (info instanceof Error && info.message === 'No auth token') return 'The Authorization header must be "Bearer <access token>".';
  const message = (info as { message?: string } | undefined)?.message;
  if (message && /session|disabled|locked|malformed|access token (has|is|lives)|API key/.test(message)) return message;
  return 'The access token is invalid.';
}

/** The contract's `bearerAuth` and `apiKeyAuth` schemes: a request to an operation that declares one needs `req.auth` (which of the two: the mount). */
export function bearerAuthSecurityHandler(req: { auth?: AuthContext; authFailure?: string }): true {
  if (req.auth) return true;
  // The validator answers a refusal here as its own 401 (its message kept), which the error handler writes.
  throw new UnauthorizedError(req.authFailure ?? 'Authentication is required: send "Authorization: Bearer <access token>".');
}
