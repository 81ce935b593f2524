import type { Schemas } from '../../contract';
import { publicEventId } from './event-presenter';
import type { WebhookDelivery, WebhookEndpoint } from './webhook-repository';

const iso = (date: Date | null): string | null => date?.toISOString() ?? null;

/** The contract's WebhookEndpoint: never the secret. */
export function presentEndpoint(endpoint: WebhookEndpoint, now: Date): Schemas['WebhookEndpoint'] {
  const rotating = endpoint.previousSecret !== null && endpoint.previousSecretExpiresAt !== null && endpoint.previousSecretExpiresAt > now;
  return {
    id: endpoint.id,
    object: 'webhook_endpoint',
    url: endpoint.url,
    description: endpoint.description,
    events: endpoint.events,
    status: endpoint.status,
    disabled_reason: endpoint.disabledReason,
    previous_secret_expires_at: rotating ? iso(endpoint.previousSecretExpiresAt) : null,
    created_at: endpoint.createdAt.toISOString(),
    updated_at: endpoint.updatedAt.toISOString(),
  };
}

/** The endpoint with its secret: the answer of a creation or a rotation only. */
export function presentEndpointWithSecret(endpoint: WebhookEndpoint, now: Date): Schemas['WebhookEndpointWithSecret'] {
  return { ...presentEndpoint(endpoint, now), secret: endpoint.secret };
}

export function presentDelivery(delivery: WebhookDelivery): Schemas['WebhookDelivery'] {
  return {
    id: delivery.id,
    object: 'webhook_delivery',
    endpoint_id: delivery.endpointId,
    event_id: publicEventId(delivery.eventId),
    event_type: delivery.eventType,
    status: delivery.status,
    attempt_count: delivery.attemptCount,
    next_attempt_at: iso(delivery.nextAttemptAt),
    attempts: delivery.attempts,
    created_at: delivery.createdAt.toISOString(),
    updated_at: delivery.updatedAt.toISOString(),
  };
}
