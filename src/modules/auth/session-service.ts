import type { Knex } from 'knex';
import { systemClock, type Clock } from '../../clock';
import { withTransaction } from '../../db/transaction';
import type { DomainError } from '../../errors';
import { AccountLockedError, InvalidCredentialsError, InvalidRefreshTokenError, RefreshTokenReusedError } from './auth-errors';
import { SessionRepository, type RevokedReason, type SessionClient, type SessionRow } from './session-repository';
import { TokenService } from './token-service';
import { UserRepository } from './user-repository';

export interface IssuedTokens {
  access_token: string;
  refresh_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_expires_in: number;
  session_id: string;
}

/** A live session as its user sees it (GET /me/sessions). */
export interface SessionView {
  id: string;
  created_at: string;
  last_used_at: string;
  ip: string | null;
  user_agent: string | null;
  current: boolean;
}

/** How a new session came to be: the session it rotates (a refresh) and the client asking. */
export interface OpenOptions {
  rotatedFrom?: SessionRow;
  client?: SessionClient;
}

/** Outcome of a refresh that must be committed before it is reported. */
type RotationOutcome = { tokens: IssuedTokens } | { error: DomainError };

/**
 * An operator's decision that stops a user getting tokens, with the error the login gives:
 * locked answers `AccountLocked`, disabled `InvalidCredentials`. A refresh checks only this:
 * the lockout after failed logins guards the password, and anyone knowing an e-mail address
 * could otherwise cut that user's sessions off.
 */
export function statusRefusal(user: { status: string }): DomainError | undefined {
  if (user.status === 'locked') return new AccountLockedError();
  if (user.status !== 'active') return new InvalidCredentialsError();
  return undefined;
}

/**
 * Opens sessions and issues the token pair for them; rotates refresh tokens and ends sessions.
 * A rotation creates a new session row linked to the previous one (`rotated_from`) and ends
 * the previous one, so its access token is refused at once too.
 */
export class SessionService {
  constructor(
    private readonly knex: Knex,
    private readonly tokens: TokenService,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * A new session and its tokens. `options.client` is kept with it (GET /me/sessions shows it);
   * a refresh names the session it rotates, whose login time the new one keeps.
   */
  async open(trx: Knex | Knex.Transaction, user: { id: string; is_admin: boolean }, options: OpenOptions = {}): Promise<IssuedTokens> {
    const refresh = this.tokens.newRefreshToken();
    const previous = options.rotatedFrom;
    const session = await new SessionRepository(trx).create({
      userId: user.id,
      refreshTokenHash: refresh.hash,
      expiresAt: new Date(this.clock().getTime() + this.tokens.refreshTtlSeconds * 1000),
      rotatedFrom: previous?.id,
      startedAt: previous?.started_at,
      client: options.client ?? (previous?.ip ? { ip: previous.ip, userAgent: previous.user_agent ?? undefined } : undefined),
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

  /**
   * Exchanges a refresh token for a new pair. The session row is locked, so two concurrent
   * refreshes with one token cannot both succeed: the second sees a rotated token, which is
   * how a stolen token shows itself, and the whole chain is revoked (committed, then 401).
   */
  async refresh(refreshToken: string, client?: SessionClient): Promise<IssuedTokens> {
    const hash = TokenService.hashRefreshToken(refreshToken);
    const outcome = await withTransaction<RotationOutcome>(this.knex, async (trx) => {
      const sessions = new SessionRepository(trx);
      const session = await sessions.findByRefreshHashForUpdate(hash);
      if (!session) return { error: new InvalidRefreshTokenError() };
      if (session.revoked_at) {
        if (session.revoked_reason === 'rotated') {
          await sessions.revokeChain(session.id, 'reuse_detected');
          return { error: new RefreshTokenReusedError() };
        }
        return { error: new InvalidRefreshTokenError() };
      }
      if (session.expires_at.getTime() <= this.clock().getTime()) return { error: new InvalidRefreshTokenError() };
      const user = await new UserRepository(trx).findCredentialsById(session.user_id);
      if (!user) return { error: new InvalidRefreshTokenError() };
      const refusal = statusRefusal(user);
      if (refusal) return { error: refusal };
      await sessions.revoke(session.id, 'rotated');
      return { tokens: await this.open(trx, { id: user.id, is_admin: user.isAdmin }, { rotatedFrom: session, client }) };
    });
    if ('error' in outcome) throw outcome.error;
    return outcome.tokens;
  }

  /** Ends every session of a closed account, in the closing transaction: every token it handed out is refused at once. */
  async endAllOfClosedAccount(db: Knex | Knex.Transaction, userId: string): Promise<number> {
    return new SessionRepository(db).revokeAllOf(userId, 'account_closed');
  }

  /**
   * The user's live sessions, newest login first (at most `limit`), `current` marking the
   * caller's. A session's id changes at every refresh (the old one ends): `created_at` is the
   * login that began it, `last_used_at` when its tokens were last issued (login or refresh).
   */
  async listLive(userId: string, currentSessionId: string, limit: number, db: Knex | Knex.Transaction = this.knex): Promise<SessionView[]> {
    const rows = await new SessionRepository(db).listLive(userId, this.clock(), limit);
    return rows.map((row) => ({
      id: row.id,
      created_at: new Date(row.started_at).toISOString(),
      last_used_at: new Date(row.last_used_at).toISOString(),
      ip: row.ip,
      user_agent: row.user_agent,
      current: row.id === currentSessionId,
    }));
  }

  /** Ends one live session of the user at once (its access token is refused from the commit); false when it is not theirs or not live. */
  revokeOwned(userId: string, sessionId: string): Promise<boolean> {
    return new SessionRepository(this.knex).revokeOwned(sessionId, userId, 'revoked_by_user');
  }

  /** Ends every live session of the user but `exceptSessionId` (when given); returns how many ended. */
  revokeAll(db: Knex | Knex.Transaction, userId: string, reason: Extract<RevokedReason, 'password_reset' | 'password_changed'>, exceptSessionId?: string): Promise<number> {
    return new SessionRepository(db).revokeAllOf(userId, reason, exceptSessionId);
  }

  /** Ends the session of the caller's access token (idempotent). */
  async logout(db: Knex | Knex.Transaction, sessionId: string): Promise<{ session_id: string; revoked: true }> {
    await new SessionRepository(db).revoke(sessionId, 'logout');
    return { session_id: sessionId, revoked: true };
  }
}
