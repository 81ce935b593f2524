import crypto from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { Config } from '../../config';

export const ACCESS_TOKEN_ALGORITHM = 'HS256' as const;

export interface AccessTokenClaims {
  sub: string;
  sid: string;
  adm: boolean;
}

/** Seconds of clock difference tolerated between the token's issuer and this server. */
export const ACCESS_TOKEN_CLOCK_TOLERANCE_SECONDS = 5;

/**
 * Why the token's time claims are unacceptable, or undefined when they are fine. The
 * signature library checks `exp` only when present; here `exp` and `iat` are required, a
 * token may not be issued in the future, may not live longer than the configured lifetime,
 * and is refused once older than that lifetime, whatever its `exp` says.
 */
export function accessTokenTimeProblem(payload: { iat?: unknown; exp?: unknown }, ttlSeconds: number, nowSeconds = Math.floor(Date.now() / 1000)): string | undefined {
  const { iat, exp } = payload;
  if (typeof exp !== 'number' || !Number.isFinite(exp)) return 'The access token has no expiry (exp).';
  if (typeof iat !== 'number' || !Number.isFinite(iat)) return 'The access token has no issue time (iat).';
  const tolerance = ACCESS_TOKEN_CLOCK_TOLERANCE_SECONDS;
  if (iat > nowSeconds + tolerance) return 'The access token is issued in the future.';
  if (exp - iat > ttlSeconds) return 'The access token lives longer than allowed.';
  if (nowSeconds - iat > ttlSeconds + tolerance) return 'The access token has expired: refresh it or log in again.';
  return undefined;
}

/** Signs short-lived access tokens and mints opaque refresh tokens (stored only as hashes). */
export class TokenService {
  constructor(private readonly jwtConfig: Config['jwt']) {}

  get accessTtlSeconds(): number {
    return this.jwtConfig.accessTtlSeconds;
  }

  get refreshTtlSeconds(): number {
    return this.jwtConfig.refreshTtlSeconds;
  }

  signAccessToken(claims: AccessTokenClaims): string {
    return jwt.sign({ sid: claims.sid, adm: claims.adm }, this.jwtConfig.secret, {
      algorithm: ACCESS_TOKEN_ALGORITHM,
      subject: claims.sub,
      issuer: this.jwtConfig.issuer,
      audience: this.jwtConfig.audience,
      expiresIn: this.jwtConfig.accessTtlSeconds,
      jwtid: crypto.randomUUID(),
    });
  }

  /** 256 random bits, URL-safe; the database keeps only its SHA-256. */
  newRefreshToken(): { token: string; hash: string } {
    const token = `rt_${crypto.randomBytes(32).toString('base64url')}`;
    return { token, hash: TokenService.hashRefreshToken(token) };
  }

  static hashRefreshToken(token: string): string {
    return crypto.createHash('sha256').update(token).digest('hex');
  }
}
