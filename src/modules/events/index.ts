/** Public face of the events module: the history of escrows and tontines (and, later, webhooks). */
export { EventRepository, type DomainEvent, type EventSubjectType, type NewEvent } from './event-repository';
