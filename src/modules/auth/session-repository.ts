import type { Knex } from 'knex';
import { prepared } from '../../db/prepared';
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
export type RevokedReason = 'logout' | 'rotated' | 'reuse_detected' | 'account_closed';

export class SessionRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  async create(input: { userId: string; refreshTokenHash: string; expiresAt: Date; rotatedFrom?: string }): Promise<SessionRow> {
    const [row] = await this.db('sessions')
      .insert({
        user_id: input.userId,
        refresh_token_hash: input.refreshTokenHash,
        expires_at: input.expiresAt,
        rotated_from: input.rotatedFrom ?? null,
      })
      .returning('*');
    return row as SessionRow;
  }

  /** The session `id` of user `userId` with its user's status (a prepared statement: every authenticated request runs it). */
  async findStanding(id: string, userId: string): Promise<SessionStanding | undefined> {
    const row = (await prepared(
      'auth_session_lookup',
      this.db('sessions as s')
        .join('users as u', 'u.id', 's.user_id')
        .where('s.id', id)
        .andWhere('s.user_id', userId)
        .first('s.id', 's.revoked_at', 's.expires_at', 'u.status', 'u.is_admin'),
    )) as { id: string; revoked_at: Date | null; expires_at: Date; status: UserStatus; is_admin: boolean } | undefined;
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

  /** Ends every live session of a user; returns how many ended. */
  async revokeAllOf(userId: string, reason: RevokedReason): Promise<number> {
    const count = await this.db('sessions').where({ user_id: userId }).whereNull('revoked_at').update({ revoked_at: this.db.fn.now(), revoked_reason: reason });
    return Number(count);
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
