import type { AuthorizedOrganization, Handlers, IdempotentResource, OperationId, Schemas } from '../../contract';
import { readableObjectTypes } from './event-visibility';
import type { StoredEvent } from './event-repository';
import { presentEvent } from './event-presenter';
import type { EventQuery, EventsService } from './events-service';
import { presentDelivery, presentEndpoint, presentEndpointWithSecret } from './webhook-presenter';
import type { WebhookService } from './webhook-service';

/** The contract's default page of events. */
const DEFAULT_EVENT_LIMIT = 20;

type EventOperation = 'listEvents' | 'getEvent' | 'listOrganizationEvents' | 'getOrganizationEvent';
type WebhookOperation =
  | 'listWebhookEndpoints'
  | 'createWebhookEndpoint'
  | 'getWebhookEndpoint'
  | 'updateWebhookEndpoint'
  | 'deleteWebhookEndpoint'
  | 'rotateWebhookEndpointSecret'
  | 'testWebhookEndpoint'
  | 'listWebhookDeliveries'
  | 'retryWebhookDelivery';

function eventQuery(query: { limit?: number; starting_after?: string; type?: string; object_id?: string }): EventQuery {
  return { limit: query.limit ?? DEFAULT_EVENT_LIMIT, startingAfter: query.starting_after, type: query.type, objectId: query.object_id };
}

function eventPage(rows: StoredEvent[], limit: number): Schemas['EventList'] {
  const hasMore = rows.length > limit;
  const data = (hasMore ? rows.slice(0, limit) : rows).map(presentEvent);
  return { object: 'list', data, has_more: hasMore, next_cursor: hasMore ? (data[data.length - 1]?.id ?? null) : null };
}

/** Whether the caller of an authorised organisation may call an operation (organizations' `callerMay`, with the module enabled). */
export type OrganizationMayCall = (organization: AuthorizedOrganization, operationId: OperationId) => boolean;

/** The events API: a user's events and an organisation's (only those about objects the caller may read). */
export function eventsHandlers(events: EventsService, mayCall: OrganizationMayCall): Handlers<EventOperation> {
  const readable = (organization: AuthorizedOrganization) => readableObjectTypes((operationId) => mayCall(organization, operationId));
  return {
    async listEvents({ caller, query }) {
      const request = eventQuery(query);
      return { data: eventPage(await events.listForUser(caller.userId, request), request.limit) };
    },
    getEvent: async ({ caller, path }) => ({ data: presentEvent(await events.getForUser(caller.userId, path.eventId)) }),
    async listOrganizationEvents({ organization, query }) {
      const request = eventQuery(query);
      return { data: eventPage(await events.listForOrganization(organization.id, request, readable(organization)), request.limit) };
    },
    getOrganizationEvent: async ({ organization, path }) => ({ data: presentEvent(await events.getForOrganization(organization.id, path.eventId, readable(organization))) }),
  };
}

/** What an Idempotency-Key replay names (never the signing secret). */
function endpointResource(organizationId: string, endpoint: { id: string; status: string }): IdempotentResource {
  return { type: 'webhook_endpoint', id: endpoint.id, status: endpoint.status, location: `/api/business/organizations/${organizationId}/webhook-endpoints/${endpoint.id}` };
}

/** A delivery has no URL of its own: a replay points at its endpoint's deliveries. */
function deliveryResource(organizationId: string, delivery: { id: string; endpointId: string; status: string }): IdempotentResource {
  const location = `/api/business/organizations/${organizationId}/webhook-endpoints/${delivery.endpointId}/deliveries`;
  return { type: 'webhook_delivery', id: delivery.id, status: delivery.status, location };
}

/** Webhook endpoints of an organisation and their deliveries (owner or admin). */
export function webhookHandlers(webhooks: WebhookService, clock: () => Date, mayCall: OrganizationMayCall): Handlers<WebhookOperation> {
  const endpoint = (value: Parameters<typeof presentEndpoint>[0]) => presentEndpoint(value, clock());
  // An endpoint receives events about the objects its configurer may read.
  const readable = (organization: AuthorizedOrganization) => readableObjectTypes((operationId) => mayCall(organization, operationId));
  return {
    async listWebhookEndpoints({ organization }) {
      const endpoints = await webhooks.list(organization.id);
      return { data: { object: 'list', data: endpoints.map(endpoint), has_more: false, next_cursor: null } };
    },
    async createWebhookEndpoint({ trx, organization, body }) {
      const created = await webhooks.create(trx, organization.id, { url: body.url, events: body.events, description: body.description, objectTypes: readable(organization) });
      return { data: presentEndpointWithSecret(created, clock()), resource: endpointResource(organization.id, created) };
    },
    getWebhookEndpoint: async ({ organization, path }) => ({ data: endpoint(await webhooks.get(organization.id, path.endpointId)) }),
    updateWebhookEndpoint: async ({ organization, path, body }) => ({ data: endpoint(await webhooks.update(organization.id, path.endpointId, { ...body, objectTypes: readable(organization) })) }),
    deleteWebhookEndpoint: async ({ organization, path }) => ({ data: endpoint(await webhooks.remove(organization.id, path.endpointId)) }),
    async rotateWebhookEndpointSecret({ trx, organization, path, body }) {
      const rotated = await webhooks.rotateSecret(trx, organization.id, path.endpointId, body?.expire_current_in_seconds ?? 86_400);
      return { data: presentEndpointWithSecret(rotated, clock()), resource: endpointResource(organization.id, rotated) };
    },
    // The attempt is an HTTP call: it runs once the delivery (and the key) is committed.
    async testWebhookEndpoint({ trx, organization, path }) {
      const recorded = await webhooks.recordTest(trx, organization.id, path.endpointId);
      const afterCommit = async () => ({ status: 202 as const, data: presentDelivery(await webhooks.deliver(recorded.id)) });
      return { status: 202, data: presentDelivery(recorded), resource: deliveryResource(organization.id, recorded), afterCommit };
    },
    async listWebhookDeliveries({ organization, path, query }) {
      const limit = query.limit ?? DEFAULT_EVENT_LIMIT;
      const rows = await webhooks.deliveries(organization.id, path.endpointId, { status: query.status, limit, startingAfter: query.starting_after });
      const hasMore = rows.length > limit;
      const data = (hasMore ? rows.slice(0, limit) : rows).map(presentDelivery);
      return { data: { object: 'list', data, has_more: hasMore, next_cursor: hasMore ? (data[data.length - 1]?.id ?? null) : null } };
    },
    async retryWebhookDelivery({ trx, organization, path }) {
      const leased = await webhooks.leaseForRetry(trx, organization.id, path.endpointId, path.deliveryId);
      const afterCommit = async () => ({ status: 202 as const, data: presentDelivery(await webhooks.deliver(leased.id)) });
      return { status: 202, data: presentDelivery(leased), resource: deliveryResource(organization.id, leased), afterCommit };
    },
  };
}
