import type { Knex } from 'knex';
import { Keyset } from '../../db/keyset';
import { beforeCommitScope, onBeforeCommit } from '../../db/transaction';
import { patternsMatching } from './event-types';

type Db = Knex | Knex.Transaction;

/** Loads an object as the API returns it, inside the transaction of the change. */
export type SnapshotLoader = (db: Db, objectId: string, at: Date) => Promise<unknown>;

/** Events are listed newest first by their global sequence; the cursor is an event's row id. */
export const EVENT_PAGES = new Keyset({ table: 'events', alias: 'e', orderBy: ['sequence'], noun: 'an event of this list' });

/** What an event is about: the `object_type` of the public event. */
export type EventSubjectType =
  | 'escrow'
  | 'tontine'
  | 'payment'
  | 'payment_link'
  | 'invoice'
  | 'quote'
  | 'credit_note'
  | 'network_status'
  | 'transfer'
  | 'webhook_endpoint'
  | 'api_key'
  | 'organization'
  | 'organization_member'
  | 'organization_invitation'
  | 'verification_session'
  | 'user'
  | 'top_up'
  | 'refund'
  | 'crypto_deposit'
  | 'crypto_conversion'
  | 'crypto_withdrawal'
  | 'payout';

export interface NewEvent {
  subjectType: EventSubjectType;
  subjectId: string;
  /** `<subject>.<what>`, such as `escrow.funded` or `tontine.payout_made`. */
  type: string;
  /** The user who acted; null when the platform did (a background job). */
  actorUserId: string | null;
  /** Internal details kept for the object's history (escrow and tontine timelines). */
  payload?: Record<string, unknown>;
  occurredAt: Date;
  /** The organisation the object belongs to (its webhook endpoints hear about it); null for a user's own object. */
  organizationId?: string | null;
  /** The object exactly as the API returns it after the change. When absent, `snapshot` gives it. */
  object?: unknown;
  /**
   * How to read the object when `object` is absent: called just before COMMIT (so it sees the
   * whole change). An event with neither carries its payload as `data.object`.
   */
  snapshot?: SnapshotLoader;
  /** The status before the change; when absent, the status shown by the object's previous event. */
  previousStatus?: string | null;
  /** Further members of `data` beside `object` and `previous_status` (`previous_role`, `previous_attributes`), with `object` only. */
  extraData?: Record<string, unknown>;
  /** Deliver to this endpoint only (the `webhook_endpoint.test` event), not to every matching one. */
  onlyEndpointId?: string;
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

/** An event with everything its public form needs. */
export interface StoredEvent extends DomainEvent {
  organizationId: string | null;
  objectSequence: number;
  data: { object: unknown; previous_status: string | null } | null;
}

interface EventRow {
  id: string;
  subject_type: EventSubjectType;
  subject_id: string;
  type: string;
  actor_user_id: string | null;
  payload: Record<string, unknown>;
  occurred_at: Date;
  organization_id?: string | null;
  object_sequence?: number;
  data?: StoredEvent['data'];
}

const COLUMNS = ['id', 'subject_type', 'subject_id', 'type', 'actor_user_id', 'payload', 'occurred_at'] as const;
const ALL_COLUMNS = [...COLUMNS, 'organization_id', 'object_sequence', 'data'] as const;

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

function toStored(row: EventRow): StoredEvent {
  return { ...toEvent(row), organizationId: row.organization_id ?? null, objectSequence: Number(row.object_sequence), data: row.data ?? null };
}

/** One entry of an object's history: what happened, who did it, when (the escrow and tontine timelines). */
export type HistoryEntry = Pick<DomainEvent, 'type' | 'actorUserId' | 'occurredAt'>;

/**
 * A column `history` for a query of `subjectType` objects (the id in `idColumn`, such as `e.id`):
 * each object's events, oldest first, read in the object's own statement, so a state change
 * needs no statement of its own to read the history it appends to. Parse it with
 * `historyFromColumn`. Read by `events_history`, whose query takes its own snapshot: in a
 * statement that locks the object (`FOR UPDATE`) and had to wait, it sees the events of the
 * change it waited for (a subquery would keep the snapshot from before the wait:
 * test/integration/escrow-history-under-lock.test.ts).
 */
export function historyColumn(db: Db, subjectType: EventSubjectType, idColumn: string): Knex.Raw {
  return db.raw('events_history(?, ??) AS history', [subjectType, idColumn]);
}

/** The entries of a `historyColumn` (pg hands json over parsed; a driver that does not, as text). */
export function historyFromColumn(value: unknown): HistoryEntry[] {
  const entries = (typeof value === 'string' ? JSON.parse(value) : value) as Array<{ type: string; actor_user_id: string | null; occurred_at_ms: number | string }>;
  return entries.map((entry) => ({ type: entry.type, actorUserId: entry.actor_user_id, occurredAt: new Date(Number(entry.occurred_at_ms)) }));
}

/** The events of each open transaction whose snapshot is still to be taken, in order. */
const pendingSnapshots = new WeakMap<object, PendingSnapshot[]>();

/** The status the object showed in its previous event (null for its first). */
const PREVIOUS_STATUS = `(SELECT p.data->'object'->>'status' FROM events p
  WHERE p.subject_type = ? AND p.subject_id = ? AND p.object_sequence < ? ORDER BY p.object_sequence DESC LIMIT 1)`;
/** The same inside the insert, before the new row exists (`seq.last` is its sequence). */
const PREVIOUS_STATUS_OF_SEQ = `(SELECT p.data->'object'->>'status' FROM events p
  WHERE p.subject_type = ? AND p.subject_id = ? AND p.object_sequence < seq.last ORDER BY p.object_sequence DESC LIMIT 1)`;

/** The event table: written in the transaction of the state change it records; append-only. */
export class EventRepository {
  constructor(private readonly db: Db) {}

  /**
   * Records one event in the caller's transaction: the row, its per-object sequence (one
   * statement) and, for an organisation's object, one pending delivery per enabled endpoint
   * whose filter matches. Never an event without its change, nor a change without its event.
   */
  async record(event: NewEvent): Promise<DomainEvent> {
    const hasObject = event.object !== undefined;
    const explicitPrevious = event.previousStatus !== undefined;
    const result = await this.db.raw(
      `WITH seq AS (
         INSERT INTO event_sequences (object_type, object_id, last) VALUES (?, ?, 1)
         ON CONFLICT (object_type, object_id) DO UPDATE SET last = event_sequences.last + 1
         RETURNING last)
       INSERT INTO events (subject_type, subject_id, type, actor_user_id, payload, occurred_at, organization_id, object_sequence, data)
       SELECT ?, ?, ?, ?, ?::jsonb, ?, ?, seq.last,
         CASE WHEN ?::boolean THEN jsonb_build_object('object', ?::jsonb, 'previous_status',
           CASE WHEN ?::boolean THEN ?::text ELSE ${PREVIOUS_STATUS_OF_SEQ} END) || ?::jsonb END
       FROM seq
       RETURNING ${ALL_COLUMNS.join(', ')}`,
      [
        event.subjectType,
        event.subjectId,
        event.subjectType,
        event.subjectId,
        event.type,
        event.actorUserId,
        JSON.stringify(event.payload ?? {}),
        event.occurredAt,
        event.organizationId ?? null,
        hasObject,
        JSON.stringify(event.object ?? null),
        explicitPrevious,
        event.previousStatus ?? null,
        event.subjectType,
        event.subjectId,
        JSON.stringify(event.extraData ?? {}),
      ],
    );
    const row = (result as { rows: EventRow[] }).rows[0] as EventRow;
    if (!hasObject) await this.snapshotLater({ id: row.id, subjectType: event.subjectType, subjectId: event.subjectId, occurredAt: event.occurredAt, payload: event.payload ?? {}, snapshot: event.snapshot });
    if (event.onlyEndpointId) {
      await this.db('webhook_deliveries').insert({ endpoint_id: event.onlyEndpointId, event_id: row.id, organization_id: event.organizationId, next_attempt_at: event.occurredAt });
    } else if (event.organizationId) {
      await this.db.raw(
        `INSERT INTO webhook_deliveries (endpoint_id, event_id, organization_id, next_attempt_at)
         SELECT id, ?, organization_id, ? FROM webhook_endpoints
         WHERE organization_id = ? AND status = 'enabled' AND events && ?::text[] AND (object_types IS NULL OR ?::text = ANY(object_types))`,
        [row.id, event.occurredAt, event.organizationId, patternsMatching(event.type), event.subjectType],
      );
    }
    return toEvent(row);
  }

  /**
   * Records several events of one object, each carrying its `object`, in one statement (the
   * sequences taken at once, the rows inserted in order): what `record` would write for each
   * in turn, `previous_status` included (for the first, the status its object showed in the
   * previous event; for each next one, the status of the one before it). Events for an
   * organisation's object, for one endpoint or without their object are recorded one by one.
   */
  async recordAll(events: readonly NewEvent[]): Promise<void> {
    const [first] = events;
    if (!first) return;
    const oneStatement = events.every(
      (e) => e.object !== undefined && !e.organizationId && !e.onlyEndpointId && e.subjectType === first.subjectType && e.subjectId === first.subjectId,
    );
    if (!oneStatement || events.length === 1) {
      for (const event of events) await this.record(event);
      return;
    }
    const rows = events.map((e) => ({
      type: e.type,
      actor_user_id: e.actorUserId,
      payload: e.payload ?? {},
      occurred_at: e.occurredAt,
      object: e.object ?? null,
      explicit_previous: e.previousStatus !== undefined,
      previous_status: e.previousStatus ?? null,
    }));
    await this.db.raw(
      `WITH input AS (
         SELECT x.n, x.e FROM jsonb_array_elements(:rows::jsonb) WITH ORDINALITY AS x(e, n)),
       seq AS (
         INSERT INTO event_sequences (object_type, object_id, last) VALUES (:subjectType, :subjectId, :count)
         ON CONFLICT (object_type, object_id) DO UPDATE SET last = event_sequences.last + :count
         RETURNING last)
       INSERT INTO events (subject_type, subject_id, type, actor_user_id, payload, occurred_at, organization_id, object_sequence, data)
       SELECT :subjectType::text, :subjectId::uuid, i.e->>'type', (i.e->>'actor_user_id')::uuid, i.e->'payload', (i.e->>'occurred_at')::timestamptz, NULL,
         seq.last - :count + i.n,
         jsonb_build_object('object', i.e->'object', 'previous_status', CASE
           WHEN (i.e->>'explicit_previous')::boolean THEN i.e->>'previous_status'
           WHEN i.n = 1 THEN (SELECT p.data->'object'->>'status' FROM events p
             WHERE p.subject_type = :subjectType AND p.subject_id = :subjectId AND p.object_sequence < seq.last - :count + 1 ORDER BY p.object_sequence DESC LIMIT 1)
           ELSE lag(i.e->'object'->>'status') OVER (ORDER BY i.n) END)
       FROM input i, seq
       ORDER BY i.n`,
      { rows: JSON.stringify(rows), subjectType: first.subjectType, subjectId: first.subjectId, count: events.length },
    );
  }

  /** Takes the object's snapshot just before COMMIT (or now, outside a managed transaction). */
  private async snapshotLater(pending: PendingSnapshot): Promise<void> {
    const trx = this.db as Knex.Transaction;
    // Queued per hook scope (one per transaction): a transaction rolled back takes its scope,
    // and what it queued, with it.
    const scope = trx.isTransaction === true ? beforeCommitScope(trx) : undefined;
    if (!scope) {
      await takeSnapshots(this.db, [pending]);
      return;
    }
    const queue = pendingSnapshots.get(scope);
    if (queue) {
      queue.push(pending);
      return;
    }
    const fresh = [pending];
    pendingSnapshots.set(scope, fresh);
    onBeforeCommit(trx, async (tx) => {
      pendingSnapshots.delete(scope);
      await takeSnapshots(tx, fresh);
    });
  }

  /** The history of several subjects of one type, oldest first, grouped by subject id. */
  async historyOf(subjectType: EventSubjectType, subjectIds: readonly string[]): Promise<Map<string, DomainEvent[]>> {
    const history = new Map<string, DomainEvent[]>(subjectIds.map((id) => [id, []]));
    if (subjectIds.length === 0) return history;
    const rows = (await this.db('events')
      .select(...COLUMNS)
      .where('subject_type', subjectType)
      .whereIn('subject_id', subjectIds)
      .orderBy('sequence', 'asc')) as EventRow[];
    for (const row of rows) history.get(row.subject_id)?.push(toEvent(row));
    return history;
  }

  async findById(id: string): Promise<StoredEvent | undefined> {
    const row = (await this.db('events').select(...ALL_COLUMNS).where({ id }).first()) as EventRow | undefined;
    return row ? toStored(row) : undefined;
  }

  /**
   * A page of events, newest first (by the global sequence), within `scope`, `limit + 1` rows;
   * `startingAfter` is an event id of the same scope (else 400).
   */
  async page(scope: (query: Knex.QueryBuilder) => void, filter: { type?: string; objectId?: string; limit: number; startingAfter?: string }): Promise<StoredEvent[]> {
    if (filter.startingAfter !== undefined) await EVENT_PAGES.requireCursorIn(this.db('events as e').modify(scope), filter.startingAfter);
    const query = this.db('events as e').modify(scope).select(ALL_COLUMNS.map((c) => `e.${c}`));
    if (filter.type?.endsWith('.*')) query.where('e.type', 'like', `${filter.type.slice(0, -1).replace(/[\\%_]/g, '\\$&')}%`);
    else if (filter.type && filter.type !== '*') query.where('e.type', filter.type);
    if (filter.objectId) query.where('e.subject_id', filter.objectId);
    const rows = (await EVENT_PAGES.paginate(this.db, query, {}, { limit: filter.limit, startingAfter: filter.startingAfter })) as EventRow[];
    return rows.map(toStored);
  }

  /** Deletes events older than `before`, at most `batch` rows; returns how many. */
  async purgeOlderThan(before: Date, batch: number): Promise<number> {
    const trx = this.db as Knex.Transaction;
    await trx.raw(`SELECT set_config('app.purge_events', 'on', true)`);
    const result = await trx.raw(
      `DELETE FROM events WHERE sequence IN (SELECT sequence FROM events WHERE occurred_at < ? ORDER BY sequence LIMIT ?)`,
      [before, batch],
    );
    return (result as { rowCount: number }).rowCount ?? 0;
  }
}

type PendingSnapshot = { id: string; subjectType: EventSubjectType; subjectId: string; occurredAt: Date; payload: Record<string, unknown>; snapshot: SnapshotLoader | undefined };

/** Writes each pending event's `data` once: the object as it stands and the status its previous event showed. */
async function takeSnapshots(db: Db, events: PendingSnapshot[]): Promise<void> {
  for (const event of events) {
    const object = event.snapshot ? await event.snapshot(db, event.subjectId, event.occurredAt) : undefined;
    await db.raw(
      `UPDATE events e SET data = jsonb_build_object('object', ?::jsonb, 'previous_status', ${PREVIOUS_STATUS.replace('< ?', '< e.object_sequence')}) WHERE e.id = ?`,
      [JSON.stringify(object ?? event.payload), event.subjectType, event.subjectId, event.id],
    );
  }
}
