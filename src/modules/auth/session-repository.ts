import type { Knex } from 'knex';
import { queryPrepared } from '../../db/prepared';
import type { UserStatus } from './user-repository';

export interface SessionRow {
  id: string;
  user_id: string;
  refresh_token_hash: string;
  created_at: Date;
  last_used_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
  revoked_reason: string | null;
  rotated_from: string | null;
  started_at: Date;
  ip: string | null;
  user_agent: string | null;
}

/** The client a session was opened or last refreshed from, as the rate limiters see its address. */
export interface SessionClient {
  ip: string;
  userAgent?: string;
}

/** The longest User-Agent kept with a session (the rest is cut). */
const MAX_USER_AGENT_LENGTH = 512;

/** `text` with control characters (a tab in a header) turned into spaces: shown as it is in GET /me/sessions. */
function printable(text: string | undefined): string | undefined {
  return text && [...text].map((c) => (c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f ? ' ' : c)).join('');
}

/** A session as an access token sees it: whether it still runs, and its user's standing. */
export interface SessionStanding {
  id: string;
  revokedAt: Date | null;
  expiresAt: Date;
  userStatus: UserStatus;
  isAdmin: boolean;
}

/** Why a session ended; stored in sessions.revoked_reason. */
export type RevokedReason = 'logout' | 'rotated' | 'reuse_detected' | 'account_closed' | 'revoked_by_user' | 'password_reset' | 'password_changed';

const SESSION_LOOKUP_SQL =
  'SELECT s.id, s.revoked_at, s.expires_at, u.status, u.is_admin FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = $1 AND s.user_id = $2 LIMIT 1';

export class SessionRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  async create(input: { userId: string; refreshTokenHash: string; expiresAt: Date; rotatedFrom?: string; startedAt?: Date; client?: SessionClient }): Promise<SessionRow> {
    const [row] = await this.db('sessions')
      .insert({
        user_id: input.userId,
        refresh_token_hash: input.refreshTokenHash,
        expires_at: input.expiresAt,
        rotated_from: input.rotatedFrom ?? null,
        ip: input.client?.ip ?? null,
        user_agent: printable(input.client?.userAgent)?.slice(0, MAX_USER_AGENT_LENGTH) || null,
        ...(input.startedAt ? { started_at: input.startedAt } : {}),
      })
      .returning('*');
    return row as SessionRow;
  }

  /** The session `id` of user `userId` with its user's status (a prepared statement: every authenticated request runs it). */
  async findStanding(id: string, userId: string): Promise<SessionStanding | undefined> {
    // Raw on the driver (no query building): every authenticated request sends it.
    const [row] = await queryPrepared<{ id: string; revoked_at: Date | null; expires_at: Date; status: UserStatus; is_admin: boolean }>(this.db, 'auth_session_lookup', SESSION_LOOKUP_SQL, [id, userId]);
    return row ? { id: row.id, revokedAt: row.revoked_at, expiresAt: row.expires_at, userStatus: row.status, isAdmin: row.is_admin } : undefined;
  }

  /** The session of a refresh token, locked until the end of the transaction. */
  async findByRefreshHashForUpdate(refreshTokenHash: string): Promise<SessionRow | undefined> {
    return this.db('sessions').where({ refresh_token_hash: refreshTokenHash }).forUpdate().first<SessionRow | undefined>('*');
  }

  /** Ends a live session; false when it was already ended. */
  async revoke(id: string, reason: RevokedReason): Promise<boolean> {
    const count = await this.db('sessions')
      .where({ id })
      .whereNull('revoked_at')
      .update({ revoked_at: this.db.fn.now(), revoked_reason: reason, last_used_at: this.db.fn.now() });
    return Number(count) === 1;
  }

  /** The user's live sessions (not ended, not expired), newest login first. */
  async listLive(userId: string, now: Date, limit: number): Promise<SessionRow[]> {
    return this.db('sessions')
      .where({ user_id: userId })
      .whereNull('revoked_at')
      .andWhere('expires_at', '>', now)
      .orderBy([{ column: 'started_at', order: 'desc' }, { column: 'id', order: 'desc' }])
      .limit(limit)
      .select<SessionRow[]>('*');
  }

  /** Ends the live session `id` of user `userId`; false when it is not theirs, not live or unknown. */
  async revokeOwned(id: string, userId: string, reason: RevokedReason): Promise<boolean> {
    const count = await this.db('sessions').where({ id, user_id: userId }).whereNull('revoked_at').update({ revoked_at: this.db.fn.now(), revoked_reason: reason });
    return Number(count) === 1;
  }

  /** Ends every live session of the user, except `exceptId` when given; returns how many ended. */
  async revokeAllOf(userId: string, reason: RevokedReason, exceptId?: string): Promise<number> {
    const query = this.db('sessions').where({ user_id: userId }).whereNull('revoked_at');
    if (exceptId) query.whereNot({ id: exceptId });
    return Number(await query.update({ revoked_at: this.db.fn.now(), revoked_reason: reason }));
  }

  /**
   * Ends every still-live session of the rotation chain `id` belongs to: its ancestors and
   * all their descendants (the family grown from the first login). Returns how many ended.
   */
  async revokeChain(id: string, reason: RevokedReason): Promise<number> {
    const result = await this.db.raw<{ rowCount: number | null }>(
      `WITH RECURSIVE ancestors AS (
         SELECT id, rotated_from FROM sessions WHERE id = ?
         UNION
         SELECT s.id, s.rotated_from FROM sessions s JOIN ancestors a ON s.id = a.rotated_from
       ),
       family AS (
         SELECT id FROM ancestors WHERE rotated_from IS NULL
         UNION
         SELECT s.id FROM sessions s JOIN family f ON s.rotated_from = f.id
       )
       UPDATE sessions SET revoked_at = now(), revoked_reason = ?
       WHERE id IN (SELECT id FROM family) AND revoked_at IS NULL`,
      [id, reason],
    );
    return result.rowCount ?? 0;
  }
}
