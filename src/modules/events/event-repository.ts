import type { Knex } from 'knex';

type Db = Knex | Knex.Transaction;

export type EventSubjectType = 'escrow' | 'tontine' | 'api_key';

export interface NewEvent {
  subjectType: EventSubjectType;
  subjectId: string;
  /** `<subject>.<what>`, such as `escrow.funded` or `tontine.payout_made`. */
  type: string;
  /** The user who acted; null when the platform did (a background job). */
  actorUserId: string | null;
  payload?: Record<string, unknown>;
  occurredAt: Date;
}

export interface DomainEvent {
  id: string;
  subjectType: EventSubjectType;
  subjectId: string;
  type: string;
  actorUserId: string | null;
  payload: Record<string, unknown>;
  occurredAt: Date;
}

interface EventRow {
  id: string;
  subject_type: EventSubjectType;
  subject_id: string;
  type: string;
  actor_user_id: string | null;
  payload: Record<string, unknown>;
  occurred_at: Date;
}

function toEvent(row: EventRow): DomainEvent {
  return {
    id: row.id,
    subjectType: row.subject_type,
    subjectId: row.subject_id,
    type: row.type,
    actorUserId: row.actor_user_id,
    payload: row.payload,
    occurredAt: row.occurred_at,
  };
}

/** The event table: written in the transaction of the state change it records; append-only. */
export class EventRepository {
  constructor(private readonly db: Db) {}

  async record(event: NewEvent): Promise<DomainEvent> {
    const [row] = await this.db('events')
      .insert({
        subject_type: event.subjectType,
        subject_id: event.subjectId,
        type: event.type,
        actor_user_id: event.actorUserId,
        payload: JSON.stringify(event.payload ?? {}),
        occurred_at: event.occurredAt,
      })
      .returning(['id', 'subject_type', 'subject_id', 'type', 'actor_user_id', 'payload', 'occurred_at']);
    return toEvent(row as EventRow);
  }

  /** The history of several subjects of one type, oldest first, grouped by subject id. */
  async historyOf(subjectType: EventSubjectType, subjectIds: readonly string[]): Promise<Map<string, DomainEvent[]>> {
    const history = new Map<string, DomainEvent[]>(subjectIds.map((id) => [id, []]));
    if (subjectIds.length === 0) return history;
    const rows = (await this.db<EventRow>('events')
      .select('id', 'subject_type', 'subject_id', 'type', 'actor_user_id', 'payload', 'occurred_at')
      .where('subject_type', subjectType)
      .whereIn('subject_id', subjectIds)
      .orderBy('sequence', 'asc')) as EventRow[];
    for (const row of rows) history.get(row.subject_id)?.push(toEvent(row));
    return history;
  }
}
