import type { Knex } from 'knex';
import { SessionRepository } from './session-repository';
import type { TokenService } from './token-service';

export interface IssuedTokens {
  access_token: string;
  refresh_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_expires_in: number;
  session_id: string;
}

/** Opens sessions and issues the token pair for them. */
export class SessionService {
  constructor(
    private readonly knex: Knex,
    private readonly tokens: TokenService,
  ) {}

  async open(user: { id: string; is_admin: boolean }, trx: Knex | Knex.Transaction = this.knex, rotatedFrom?: string): Promise<IssuedTokens> {
    const refresh = this.tokens.newRefreshToken();
    const session = await new SessionRepository(trx).create({
      userId: user.id,
      refreshTokenHash: refresh.hash,
      expiresAt: new Date(Date.now() + this.tokens.refreshTtlSeconds * 1000),
      rotatedFrom,
    });
    return {
      access_token: this.tokens.signAccessToken({ sub: user.id, sid: session.id, adm: user.is_admin }),
      refresh_token: refresh.token,
      token_type: 'Bearer',
      expires_in: this.tokens.accessTtlSeconds,
      refresh_expires_in: this.tokens.refreshTtlSeconds,
      session_id: session.id,
    };
  }
}
