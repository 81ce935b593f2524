import type { Knex } from 'knex';
import { FIRST_RETRY_AFTER_MS, LONGEST_RETRY_AFTER_MS, retryAfterMs, type RailInstruction, type RailInstructionKind } from './rail-instruction';

type Db = Knex | Knex.Transaction;

interface Row {
  id: string;
  kind: RailInstructionKind;
  subject_id: string;
  status: 'pending' | 'delivered';
  attempts: number;
  next_attempt_at: Date;
  last_error: string | null;
}

function toInstruction(row: Row): RailInstruction {
  return {
    id: row.id,
    kind: row.kind,
    subjectId: row.subject_id,
    status: row.status,
    attempts: Number(row.attempts),
    nextAttemptAt: row.next_attempt_at,
    lastError: row.last_error,
  };
}

/**
 * Queries of rail_instructions. Rows are inserted by the trigger of each change of state; an
 * attempt claims its row first (one more attempt, the next one leased after the backoff), so
 * two instances never attempt the same instruction at once, and one that died is retried.
 */
export class RailInstructionRepository {
  constructor(private readonly db: Db) {}

  /** Claims up to `limit` pending instructions whose attempt is due at `now`, the longest waiting first. */
  async claimDue(now: Date, limit: number): Promise<RailInstruction[]> {
    const { rows } = (await this.db.raw(
      `UPDATE rail_instructions r SET attempts = r.attempts + 1,
              next_attempt_at = ?::timestamptz + make_interval(secs => least(? * power(2, least(r.attempts, 20)), ?) / 1000.0)
        WHERE r.id IN (SELECT id FROM rail_instructions WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ? FOR UPDATE SKIP LOCKED)
        RETURNING r.*`,
      [now, FIRST_RETRY_AFTER_MS, LONGEST_RETRY_AFTER_MS, now, limit],
    )) as { rows: Row[] };
    return rows.map(toInstruction).sort((a, b) => a.nextAttemptAt.getTime() - b.nextAttemptAt.getTime() || a.id.localeCompare(b.id));
  }

  /**
   * Claims the instruction of `subjectId` for the request that recorded it, right after its
   * commit: only while nobody has attempted it yet (the job's attempts come later).
   */
  async claimFirst(kind: RailInstructionKind, subjectId: string, now: Date): Promise<RailInstruction | undefined> {
    const [row] = (await this.db('rail_instructions')
      .where({ kind, subject_id: subjectId, status: 'pending', attempts: 0 })
      .update({ attempts: 1, next_attempt_at: new Date(now.getTime() + retryAfterMs(1)) })
      .returning('*')) as Row[];
    return row ? toInstruction(row) : undefined;
  }

  async markDelivered(id: string, now: Date): Promise<void> {
    await this.db('rail_instructions').where({ id, status: 'pending' }).update({ status: 'delivered', delivered_at: now, last_error: null });
  }

  /** After a failed attempt: what failed (the next attempt is already leased by the claim). */
  async noteFailure(id: string, error: string): Promise<void> {
    await this.db('rail_instructions').where({ id, status: 'pending' }).update({ last_error: error.slice(0, 1000) });
  }

  async find(kind: RailInstructionKind, subjectId: string): Promise<RailInstruction | undefined> {
    const row = (await this.db('rail_instructions').where({ kind, subject_id: subjectId }).first()) as Row | undefined;
    return row ? toInstruction(row) : undefined;
  }
}
