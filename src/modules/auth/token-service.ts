import crypto from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { Config } from '../../config';

export const ACCESS_TOKEN_ALGORITHM = 'HS256' as const;

export interface AccessTokenClaims {
  sub: string;
  sid: string;
  adm: boolean;
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
