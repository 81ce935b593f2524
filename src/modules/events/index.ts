/** Public face of the events module: the outbox of every state change, the events API and partner webhooks. */
export { EventRepository, historyColumn, historyFromColumn, type DomainEvent, type EventSubjectType, type HistoryEntry, type NewEvent, type SnapshotLoader, type StoredEvent } from './event-repository';
export { EVENT_OBJECT_TYPES, EVENT_TYPES, isKnownPattern, patternsMatching, type EventType } from './event-types';
export { presentEvent, publicEventId } from './event-presenter';
export { EventsService } from './events-service';
export { eventsHandlers, webhookHandlers, type OrganizationMayCall } from './events-handlers';
export { EVENT_READ_OPERATION, readableObjectTypes } from './event-visibility';
export { MAX_ENDPOINTS, WebhookService, insertDemoEndpoint, type DeliveryOutcome, type WebhookOptions } from './webhook-service';
export { generateSecret, sign, signatureHeader } from './webhook-signature';
export { checkUrlSyntax, checkWebhookUrl, guardedLookup, isPublicAddress, type LookupAll, type UrlRefusal } from './webhook-url-guard';
export { nextStep, parseRetryAfter, failingTooLong } from './webhook-schedule';
export { eventsJobs } from './events-jobs';
