import type { Knex } from 'knex';
import { withTransaction } from '../../db/transaction';
import { NotFoundError, UnprocessableError, ValidationError } from '../../errors';
import { EventRepository } from './event-repository';
import { presentEvent, publicEventId } from './event-presenter';
import { isKnownPattern } from './event-types';
import { attemptDelivery } from './webhook-delivery';
import { WebhookRepository, type DeliveryStatus, type WebhookDelivery, type WebhookEndpoint } from './webhook-repository';
import { failingTooLong, nextStep, type AttemptResult } from './webhook-schedule';
import { presentEndpoint } from './webhook-presenter';
import { generateSecret } from './webhook-signature';
import { checkWebhookUrl, type LookupAll } from './webhook-url-guard';
import { readConnection } from '../../db/read-routing';

/** At most this many endpoints per organisation. */
export const MAX_ENDPOINTS = 16;

export interface WebhookOptions {
  timeoutMs: number;
  retryDelaysSeconds: readonly number[];
  disableAfterHours: number;
  allowPrivateTargets: boolean;
}

export interface WebhookServiceDeps {
  knex: Knex;
  options: WebhookOptions;
  clock: () => Date;
  /** DNS of the SSRF guard (tests inject one). */
  lookupAll?: LookupAll;
  /** Jitter source in [0, 1) (tests inject 0). */
  random?: () => number;
  logger?: { error(fields: object, message: string): void };
}

export type DeliveryOutcome = 'succeeded' | 'failed' | 'gone' | 'exhausted';

export interface EndpointInput {
  url?: string;
  events?: string[];
  description?: string | null;
  status?: 'enabled' | 'disabled';
}

const NOT_FOUND = 'No webhook endpoint of this organisation has this id.';

/**
 * Webhook endpoints of an organisation and the delivery of its events to them. Deliveries are
 * rows written with their event (the outbox); `runDue` claims the due ones (SKIP LOCKED, on
 * any instance) and `deliver` makes one attempt outside any transaction, then records it.
 */
export class WebhookService {
  private readonly outcomeListeners: ((outcome: DeliveryOutcome) => void)[] = [];

  constructor(private readonly deps: WebhookServiceDeps) {}

  /** Called with each attempt's outcome (the `webhook_deliveries_total` metric). */
  onOutcome(listener: (outcome: DeliveryOutcome) => void): void {
    this.outcomeListeners.push(listener);
  }

  private get policy() {
    return { allowPrivateTargets: this.deps.options.allowPrivateTargets };
  }

  private async checkUrl(url: string): Promise<void> {
    const check = await checkWebhookUrl(url, this.policy, this.deps.lookupAll);
    if (!check.ok) throw new UnprocessableError('WebhookUrlNotAllowed', `The webhook URL is not allowed (${check.reason}).`, { reason: check.reason });
  }

  private static checkEvents(events: string[]): void {
    const unknown = events.filter((pattern) => !isKnownPattern(pattern));
    if (unknown.length > 0) throw ValidationError.field('body.events', `Unknown event type or prefix: ${unknown.join(', ')}.`);
  }

  list(organizationId: string): Promise<WebhookEndpoint[]> {
    return new WebhookRepository(readConnection(this.deps.knex)).listEndpoints(organizationId);
  }

  async get(organizationId: string, id: string): Promise<WebhookEndpoint> {
    const endpoint = await new WebhookRepository(this.deps.knex).findEndpoint(organizationId, id);
    if (!endpoint) throw new NotFoundError(NOT_FOUND);
    return endpoint;
  }

  async create(organizationId: string, input: { url: string; events: string[]; description?: string | null }, db: Knex | Knex.Transaction = this.deps.knex): Promise<WebhookEndpoint> {
    WebhookService.checkEvents(input.events);
    await this.checkUrl(input.url);
    return withTransaction(db, async (trx) => {
      const repo = new WebhookRepository(trx);
      await repo.lockOrganization(organizationId);
      if ((await repo.countEndpoints(organizationId)) >= MAX_ENDPOINTS) {
        throw new UnprocessableError('TooManyWebhookEndpoints', `An organisation has at most ${MAX_ENDPOINTS} webhook endpoints.`, { max: MAX_ENDPOINTS });
      }
      return repo.insertEndpoint({ organizationId, url: input.url, description: input.description ?? null, events: input.events, secret: generateSecret(), now: this.deps.clock() });
    });
  }

  async update(organizationId: string, id: string, input: EndpointInput): Promise<WebhookEndpoint> {
    if (input.events) WebhookService.checkEvents(input.events);
    if (input.url !== undefined) await this.checkUrl(input.url);
    return withTransaction(this.deps.knex, async (trx) => {
      const repo = new WebhookRepository(trx);
      const endpoint = await repo.findEndpoint(organizationId, id, { forUpdate: true });
      if (!endpoint) throw new NotFoundError(NOT_FOUND);
      const now = this.deps.clock();
      const statusChange =
        input.status === undefined || input.status === endpoint.status
          ? {}
          : input.status === 'enabled'
            ? { status: 'enabled' as const, disabledReason: null, failingSince: null }
            : { status: 'disabled' as const, disabledReason: 'manual' as const };
      return repo.updateEndpoint(id, { url: input.url, events: input.events, description: input.description, ...statusChange, updatedAt: now });
    });
  }

  async remove(organizationId: string, id: string): Promise<WebhookEndpoint> {
    return withTransaction(this.deps.knex, async (trx) => {
      const repo = new WebhookRepository(trx);
      const endpoint = await repo.findEndpoint(organizationId, id, { forUpdate: true });
      if (!endpoint) throw new NotFoundError(NOT_FOUND);
      await repo.deleteEndpoint(id);
      return endpoint;
    });
  }

  /** A new secret; the current one keeps signing (beside it) for `expireCurrentInSeconds`. */
  async rotateSecret(organizationId: string, id: string, expireCurrentInSeconds: number, db: Knex | Knex.Transaction = this.deps.knex): Promise<WebhookEndpoint> {
    return withTransaction(db, async (trx) => {
      const repo = new WebhookRepository(trx);
      const endpoint = await repo.findEndpoint(organizationId, id, { forUpdate: true });
      if (!endpoint) throw new NotFoundError(NOT_FOUND);
      const now = this.deps.clock();
      const keep = expireCurrentInSeconds > 0;
      return repo.updateEndpoint(id, {
        secret: generateSecret(),
        previousSecret: keep ? endpoint.secret : null,
        previousSecretExpiresAt: keep ? new Date(now.getTime() + expireCurrentInSeconds * 1000) : null,
        updatedAt: now,
      });
    });
  }

  /** Records `webhook_endpoint.test` for this endpoint alone and makes its first attempt now. */
  async test(organizationId: string, id: string): Promise<WebhookDelivery> {
    return this.deliver((await this.recordTest(organizationId, id)).id);
  }

  /**
   * The first half of `test`, in `db` (the caller's transaction when it is one): the test event
   * and its delivery, leased for the attempt `deliver` makes once this is committed.
   */
  async recordTest(organizationId: string, id: string, db: Knex | Knex.Transaction = this.deps.knex): Promise<WebhookDelivery> {
    return withTransaction(db, async (trx) => {
      const repo = new WebhookRepository(trx);
      const endpoint = await repo.findEndpoint(organizationId, id);
      if (!endpoint) throw new NotFoundError(NOT_FOUND);
      const event = await new EventRepository(trx).record({
        subjectType: 'webhook_endpoint',
        subjectId: endpoint.id,
        type: 'webhook_endpoint.test',
        actorUserId: null,
        occurredAt: this.deps.clock(),
        organizationId,
        object: presentEndpoint(endpoint, this.deps.clock()),
        onlyEndpointId: endpoint.id,
      });
      const delivery = (await repo.findDeliveryForEvent(endpoint.id, event.id)) as WebhookDelivery;
      await repo.lease(delivery.id, this.leaseUntil(), this.deps.clock());
      return delivery;
    });
  }

  async deliveries(organizationId: string, endpointId: string, filter: { status?: DeliveryStatus; limit: number; startingAfter?: string }): Promise<WebhookDelivery[]> {
    const repo = new WebhookRepository(readConnection(this.deps.knex));
    if (!(await repo.findEndpoint(organizationId, endpointId))) throw new NotFoundError(NOT_FOUND);
    return repo.pageDeliveries(endpointId, filter);
  }

  /** Sends a delivery again now (whatever its status) and answers it as it stands after that attempt. */
  async retry(organizationId: string, endpointId: string, deliveryId: string): Promise<WebhookDelivery> {
    await this.leaseForRetry(organizationId, endpointId, deliveryId);
    return this.deliver(deliveryId);
  }

  /** The first half of `retry`, in `db`: the delivery, leased for the attempt `deliver` makes once this is committed. */
  async leaseForRetry(organizationId: string, endpointId: string, deliveryId: string, db: Knex | Knex.Transaction = this.deps.knex): Promise<WebhookDelivery> {
    const repo = new WebhookRepository(db);
    const delivery = (await repo.findEndpoint(organizationId, endpointId)) ? await repo.findDelivery(endpointId, deliveryId) : undefined;
    if (!delivery) throw new NotFoundError('No delivery of this endpoint has this id.');
    await repo.lease(deliveryId, this.leaseUntil(), this.deps.clock());
    return delivery;
  }

  /**
   * One batch of due deliveries: claimed (each by one worker across instances), then
   * attempted one after the other. Returns how many were attempted.
   */
  async runDue(limit = 50): Promise<number> {
    const now = this.deps.clock();
    const leaseUntil = this.leaseUntil();
    const claimed = await withTransaction(this.deps.knex, (trx) => new WebhookRepository(trx).claimDue(now, leaseUntil, limit));
    for (const id of claimed) {
      try {
        await this.deliver(id);
      } catch (error) {
        // The lease lets another run try it again.
        this.deps.logger?.error({ err: error, deliveryId: id }, 'webhook delivery failed to run');
      }
    }
    return claimed.length;
  }

  /** Until when an attempt starting now keeps its delivery from being claimed again (the timeout and a margin). */
  private leaseUntil(): Date {
    return new Date(this.deps.clock().getTime() + this.deps.options.timeoutMs + 30_000);
  }

  /** Makes one attempt of a delivery (HTTP outside any transaction), then records its outcome. */
  async deliver(deliveryId: string): Promise<WebhookDelivery> {
    const repo = new WebhookRepository(this.deps.knex);
    const delivery = (await repo.findDeliveryById(deliveryId)) as WebhookDelivery;
    const endpoint = (await repo.findEndpointById(delivery.endpointId)) as WebhookEndpoint;
    const event = await new EventRepository(this.deps.knex).findById(delivery.eventId);
    if (!event) throw new Error(`the event of delivery ${deliveryId} is gone`);
    const now = this.deps.clock();
    const secrets = [endpoint.secret];
    if (endpoint.previousSecret && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > now) secrets.push(endpoint.previousSecret);
    const result = await attemptDelivery({
      url: endpoint.url,
      eventId: publicEventId(event.id),
      body: JSON.stringify(presentEvent(event)),
      secrets,
      timeoutMs: this.deps.options.timeoutMs,
      policy: this.policy,
      now: this.deps.clock,
      lookupAll: this.deps.lookupAll,
    });
    const outcome = await this.record(deliveryId, result, now);
    for (const listener of this.outcomeListeners) listener(outcome);
    return (await repo.findDeliveryById(deliveryId)) as WebhookDelivery;
  }

  private async record(deliveryId: string, result: AttemptResult, attemptedAt: Date): Promise<DeliveryOutcome> {
    return withTransaction(this.deps.knex, async (trx) => {
      const repo = new WebhookRepository(trx);
      const delivery = await repo.findDeliveryById(deliveryId, { forUpdate: true });
      if (!delivery) return result.outcome === 'gone' ? 'gone' : result.outcome === 'succeeded' ? 'succeeded' : 'failed';
      const endpoint = (await repo.findEndpointById(delivery.endpointId, { forUpdate: true })) as WebhookEndpoint;
      const now = this.deps.clock();
      const step = nextStep(result, delivery.attemptCount + 1, this.deps.options.retryDelaysSeconds, (this.deps.random ?? Math.random)());
      await repo.recordAttempt(deliveryId, {
        status: step.status,
        attempt: { attempted_at: attemptedAt.toISOString(), http_status: result.httpStatus, error: result.error, duration_ms: result.durationMs },
        nextAttemptAt: step.status === 'failed' && step.retryInMs !== null ? new Date(now.getTime() + step.retryInMs) : null,
        now,
      });
      if (result.outcome === 'succeeded') {
        if (endpoint.failingSince) await repo.updateEndpoint(endpoint.id, { failingSince: null, updatedAt: now });
        return 'succeeded';
      }
      const failingSince = endpoint.failingSince ?? attemptedAt;
      const disable = result.outcome === 'gone' ? 'gone' : failingTooLong(failingSince, now, this.deps.options.disableAfterHours) ? 'failing' : undefined;
      if (disable && endpoint.status === 'enabled') {
        const disabled = await repo.updateEndpoint(endpoint.id, { status: 'disabled', disabledReason: disable, failingSince, updatedAt: now });
        // The organisation's other endpoints hear about it (this one is disabled already).
        await new EventRepository(trx).record({
          subjectType: 'webhook_endpoint',
          subjectId: endpoint.id,
          type: 'webhook_endpoint.disabled',
          actorUserId: null,
          occurredAt: now,
          organizationId: endpoint.organizationId,
          object: presentEndpoint(disabled, now),
          previousStatus: 'enabled',
        });
      } else if (!endpoint.failingSince) {
        await repo.updateEndpoint(endpoint.id, { failingSince, updatedAt: now });
      }
      return result.outcome === 'gone' ? 'gone' : step.status === 'exhausted' ? 'exhausted' : 'failed';
    });
  }
}

/**
 * The demo data's endpoint of an organisation (src/seed/webhooks-seed.ts): a local address,
 * disabled, so nothing is sent until a developer enables it with a receiver listening there;
 * its `webhook_endpoint.test` event is one of the organisation's demo events.
 */
export async function insertDemoEndpoint(trx: Knex.Transaction, organizationId: string, url: string, now: Date): Promise<void> {
  const repo = new WebhookRepository(trx);
  const created = await repo.insertEndpoint({ organizationId, url, description: 'Demo receiver (enable it once something listens there)', events: ['*'], secret: generateSecret(), now });
  const disabled = await repo.updateEndpoint(created.id, { status: 'disabled', disabledReason: 'manual', updatedAt: now });
  await new EventRepository(trx).record({
    subjectType: 'webhook_endpoint',
    subjectId: disabled.id,
    type: 'webhook_endpoint.test',
    actorUserId: null,
    occurredAt: now,
    organizationId,
    object: presentEndpoint(disabled, now),
    onlyEndpointId: disabled.id,
  });
}
