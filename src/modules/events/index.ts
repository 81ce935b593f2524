/** Public face of the events module: the outbox of every state change, the events API and partner webhooks. */
export { EventRepository, type DomainEvent, type EventSubjectType, type NewEvent, type StoredEvent } from './event-repository';
export { registerSnapshot, type SnapshotLoader } from './event-snapshots';
export { EVENT_OBJECT_TYPES, EVENT_TYPES, isKnownPattern, patternsMatching, type EventType } from './event-types';
