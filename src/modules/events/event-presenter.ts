import type { Schemas } from '../../contract';
import type { StoredEvent } from './event-repository';

const EVENT_ID = /^evt_([0-9a-f]{8})([0-9a-f]{4})([0-9a-f]{4})([0-9a-f]{4})([0-9a-f]{12})$/;

/** `evt_` and the row's UUID without dashes. */
export function publicEventId(id: string): string {
  return `evt_${id.replace(/-/g, '').toLowerCase()}`;
}

/** The row id of a public event id; undefined when it is not one. */
export function eventRowId(publicId: string): string | undefined {
  const parts = EVENT_ID.exec(publicId);
  return parts ? parts.slice(1).join('-') : undefined;
}

/** The contract's Event (the body of every webhook delivery too). */
export function presentEvent(event: StoredEvent): Schemas['Event'] {
  return {
    id: publicEventId(event.id),
    object: 'event',
    type: event.type,
    created_at: event.occurredAt.toISOString(),
    object_type: event.subjectType,
    object_id: event.subjectId,
    sequence: event.objectSequence,
    organization_id: event.organizationId,
    actor_user_id: event.actorUserId,
    // An event recorded without a snapshot (`data` NULL): its history details stand in.
    data: (event.data ?? { object: event.payload, previous_status: null }) as Schemas['Event']['data'],
  };
}
