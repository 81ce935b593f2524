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
  /** Connecting (DNS and TCP) must take at most this long; capped at `timeoutMs` (default 3 s). */
  connectTimeoutMs?: number;
  /** Attempts under way at once on this instance (default 64). */
  maxInFlight?: number;
  /** Attempts under way at once to one endpoint, across instances (default 4). */
  maxInFlightPerEndpoint?: number;
  /** Attempts under way at once to one organisation's endpoints, across instances (default 16). */
  maxInFlightPerOrganization?: number;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 3_000;
const DEFAULT_MAX_IN_FLIGHT = 64;
const DEFAULT_MAX_IN_FLIGHT_PER_ENDPOINT = 4;
const DEFAULT_MAX_IN_FLIGHT_PER_ORGANIZATION = 16;

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
  /** The object types the endpoint receives events about (what its configurer may read). */
  objectTypes?: readonly string[];
}

const NOT_FOUND = 'No webhook endpoint of this organisation has this id.';

/**
 * Webhook endpoints of an organisation and the delivery of its events to them. Deliveries are
 * rows written with their event (the outbox); `dispatchDue` and `runDue` claim the due ones
 * (SKIP LOCKED, on any instance, fairly: see `WebhookRepository.claimDue`) and `deliver` makes
 * one attempt outside any transaction, then records it. Attempts run side by side, bounded per
 * instance, per endpoint and per organisation, so a receiver that hangs holds only its own
 * endpoint's slots (and at most its organisation's share) until its timeout.
 */
export class WebhookService {
  private readonly outcomeListeners: ((outcome: DeliveryOutcome) => void)[] = [];
  /** Attempts under way on this instance. */
  private readonly inFlight = new Set<Promise<void>>();
  private refilling = false;
  private refillAgain = false;
  private stopped = false;

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

  async create(db: Knex | Knex.Transaction, organizationId: string, input: { url: string; events: string[]; description?: string | null; objectTypes?: readonly string[] }): Promise<WebhookEndpoint> {
    WebhookService.checkEvents(input.events);
    await this.checkUrl(input.url);
    return withTransaction(db, async (trx) => {
      const repo = new WebhookRepository(trx);
      await repo.lockOrganization(organizationId);
      if ((await repo.countEndpoints(organizationId)) >= MAX_ENDPOINTS) {
        throw new UnprocessableError('TooManyWebhookEndpoints', `An organisation has at most ${MAX_ENDPOINTS} webhook endpoints.`, { max: MAX_ENDPOINTS });
      }
      return repo.insertEndpoint({ organizationId, url: input.url, description: input.description ?? null, events: input.events, objectTypes: input.objectTypes ?? null, secret: generateSecret(), now: this.deps.clock() });
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
      return repo.updateEndpoint(id, { url: input.url, events: input.events, description: input.description, objectTypes: input.objectTypes, ...statusChange, updatedAt: now });
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
  async rotateSecret(db: Knex | Knex.Transaction, organizationId: string, id: string, expireCurrentInSeconds: number): Promise<WebhookEndpoint> {
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
    return this.deliver((await this.recordTest(this.deps.knex, organizationId, id)).id);
  }

  /**
   * The first half of `test`, in `db` (the caller's transaction when it is one): the test event
   * and its delivery, leased for the attempt `deliver` makes once this is committed.
   */
  async recordTest(db: Knex | Knex.Transaction, organizationId: string, id: string): Promise<WebhookDelivery> {
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
    await this.leaseForRetry(this.deps.knex, organizationId, endpointId, deliveryId);
    return this.deliver(deliveryId);
  }

  /** The first half of `retry`, in `db`: the delivery, leased for the attempt `deliver` makes once this is committed. */
  async leaseForRetry(db: Knex | Knex.Transaction, organizationId: string, endpointId: string, deliveryId: string): Promise<WebhookDelivery> {
    const repo = new WebhookRepository(db);
    const delivery = (await repo.findEndpoint(organizationId, endpointId)) ? await repo.findDelivery(endpointId, deliveryId) : undefined;
    if (!delivery) throw new NotFoundError('No delivery of this endpoint has this id.');
    await repo.lease(deliveryId, this.leaseUntil(), this.deps.clock());
    return delivery;
  }

  /**
   * One batch of due deliveries (at most `limit`, and what this instance's bound leaves),
   * claimed fairly and attempted side by side; resolves once every attempt of the batch has
   * been recorded. Returns how many were claimed.
   */
  async runDue(limit = 50): Promise<number> {
    const claimed = await this.claim(limit);
    await Promise.all(claimed.map((id) => this.start(id, false)));
    return claimed.length;
  }

  /**
   * What the `webhooks.dispatch-due` job runs: claims as many due deliveries as the bounds
   * allow and starts their attempts without waiting for them (a receiver that hangs never
   * holds the next claim back). Each attempt that ends claims again, so a backlog drains
   * between the job's runs. Returns how many were claimed.
   */
  async dispatchDue(): Promise<number> {
    if (this.stopped) return 0;
    const claimed = await this.claim(Number.POSITIVE_INFINITY);
    for (const id of claimed) void this.start(id, true);
    return claimed.length;
  }

  /** Stops claiming, and waits for the attempts under way on this instance to be recorded. */
  async stop(): Promise<void> {
    this.stopped = true;
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** Attempts under way on this instance. */
  get attemptsUnderWay(): number {
    return this.inFlight.size;
  }

  private async claim(limit: number): Promise<string[]> {
    const room = Math.min(limit, (this.deps.options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT) - this.inFlight.size);
    if (room <= 0) return [];
    const now = this.deps.clock();
    const bounds = {
      perEndpoint: this.deps.options.maxInFlightPerEndpoint ?? DEFAULT_MAX_IN_FLIGHT_PER_ENDPOINT,
      perOrganization: this.deps.options.maxInFlightPerOrganization ?? DEFAULT_MAX_IN_FLIGHT_PER_ORGANIZATION,
    };
    return withTransaction(this.deps.knex, (trx) => new WebhookRepository(trx).claimDue(now, this.leaseUntil(), room, bounds));
  }

  /** One claimed delivery's attempt, counted as under way until it is recorded; then, for the dispatcher, the next claim. */
  private start(id: string, thenClaim: boolean): Promise<void> {
    const attempt: Promise<void> = this.deliver(id).then(
      () => undefined,
      // The lease lets another run try it again.
      (error: unknown) => this.deps.logger?.error({ err: error, deliveryId: id }, 'webhook delivery failed to run'),
    );
    const tracked = attempt.finally(() => {
      this.inFlight.delete(tracked);
      if (thenClaim) this.refill();
    });
    this.inFlight.add(tracked);
    return tracked;
  }

  /** Claims again after an attempt ended (one claim at a time; an end meanwhile asks for one more). */
  private refill(): void {
    if (this.stopped) return;
    if (this.refilling) {
      this.refillAgain = true;
      return;
    }
    this.refilling = true;
    this.dispatchDue()
      .catch((error: unknown) => this.deps.logger?.error({ err: error }, 'claiming due webhook deliveries failed'))
      .finally(() => {
        this.refilling = false;
        if (this.refillAgain) {
          this.refillAgain = false;
          this.refill();
        }
      });
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
      connectTimeoutMs: Math.min(this.deps.options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, this.deps.options.timeoutMs),
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
  const created = await repo.insertEndpoint({ organizationId, url, description: 'Demo receiver (enable it once something listens there)', events: ['*'], objectTypes: null, secret: generateSecret(), now });
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
