import type { Knex } from 'knex';

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
}
