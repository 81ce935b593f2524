import type { Knex } from 'knex';
import { Keyset } from '../../db/keyset';

type Db = Knex | Knex.Transaction;

/** An endpoint's deliveries, newest first. */
const DELIVERIES = new Keyset({ table: 'webhook_deliveries', alias: 'd', noun: 'a delivery of this endpoint' });

export type EndpointStatus = 'enabled' | 'disabled';
export type DisabledReason = 'manual' | 'gone' | 'failing';
export type DeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'exhausted';

export interface WebhookEndpoint {
  id: string;
  organizationId: string;
  url: string;
  description: string | null;
  events: string[];
  status: EndpointStatus;
  disabledReason: DisabledReason | null;
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: Date | null;
  failingSince: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface DeliveryAttempt {
  attempted_at: string;
  http_status: number | null;
  error: string | null;
  duration_ms: number;
}

export interface WebhookDelivery {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  organizationId: string;
  status: DeliveryStatus;
  attemptCount: number;
  nextAttemptAt: Date | null;
  attempts: DeliveryAttempt[];
  createdAt: Date;
  updatedAt: Date;
}

interface EndpointRow {
  id: string;
  organization_id: string;
  url: string;
  description: string | null;
  events: string[];
  status: EndpointStatus;
  disabled_reason: DisabledReason | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  organization_id: string;
  status: DeliveryStatus;
  attempt_count: number;
  next_attempt_at: Date | null;
  attempts: DeliveryAttempt[];
  created_at: Date;
  updated_at: Date;
}

function toEndpoint(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    organizationId: row.organization_id,
    url: row.url,
    description: row.description,
    events: row.events,
    status: row.status,
    disabledReason: row.disabled_reason,
    secret: row.secret,
    previousSecret: row.previous_secret,
    previousSecretExpiresAt: row.previous_secret_expires_at,
    failingSince: row.failing_since,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function toDelivery(row: DeliveryRow): WebhookDelivery {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.event_type,
    organizationId: row.organization_id,
    status: row.status,
    attemptCount: Number(row.attempt_count),
    nextAttemptAt: row.next_attempt_at,
    attempts: row.attempts,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export interface EndpointChange {
  url?: string;
  description?: string | null;
  events?: string[];
  objectTypes?: readonly string[];
  status?: EndpointStatus;
  disabledReason?: DisabledReason | null;
  secret?: string;
  previousSecret?: string | null;
  previousSecretExpiresAt?: Date | null;
  failingSince?: Date | null;
  updatedAt: Date;
}

const DELIVERY_COLUMNS = ['d.id', 'd.endpoint_id', 'd.event_id', 'e.type as event_type', 'd.organization_id', 'd.status', 'd.attempt_count', 'd.next_attempt_at', 'd.attempts', 'd.created_at', 'd.updated_at'];

/** Webhook endpoints and their deliveries (an endpoint is always read within its organisation). */
export class WebhookRepository {
  constructor(private readonly db: Db) {}

  async lockOrganization(organizationId: string): Promise<void> {
    await this.db('organizations').where({ id: organizationId }).forUpdate().first('id');
  }

  async countEndpoints(organizationId: string): Promise<number> {
    const row = (await this.db('webhook_endpoints').where({ organization_id: organizationId }).count({ n: '*' }).first()) as { n: string | number };
    return Number(row.n);
  }

  async insertEndpoint(input: { organizationId: string; url: string; description: string | null; events: string[]; objectTypes: readonly string[] | null; secret: string; now: Date }): Promise<WebhookEndpoint> {
    const [row] = (await this.db('webhook_endpoints')
      .insert({
        organization_id: input.organizationId,
        url: input.url,
        description: input.description,
        events: input.events,
        object_types: input.objectTypes === null ? null : [...input.objectTypes],
        secret: input.secret,
        created_at: input.now,
        updated_at: input.now,
      })
      .returning('*')) as EndpointRow[];
    return toEndpoint(row as EndpointRow);
  }

  async listEndpoints(organizationId: string): Promise<WebhookEndpoint[]> {
    const rows = (await this.db('webhook_endpoints').where({ organization_id: organizationId }).orderBy([{ column: 'created_at' }, { column: 'id' }])) as EndpointRow[];
    return rows.map(toEndpoint);
  }

  async findEndpoint(organizationId: string, id: string, options: { forUpdate?: boolean } = {}): Promise<WebhookEndpoint | undefined> {
    const query = this.db('webhook_endpoints').where({ organization_id: organizationId, id });
    if (options.forUpdate) query.forUpdate();
    const row = (await query.first()) as EndpointRow | undefined;
    return row ? toEndpoint(row) : undefined;
  }

  async findEndpointById(id: string, options: { forUpdate?: boolean } = {}): Promise<WebhookEndpoint | undefined> {
    const query = this.db('webhook_endpoints').where({ id });
    if (options.forUpdate) query.forUpdate();
    const row = (await query.first()) as EndpointRow | undefined;
    return row ? toEndpoint(row) : undefined;
  }

  async updateEndpoint(id: string, change: EndpointChange): Promise<WebhookEndpoint> {
    const row: Record<string, unknown> = { updated_at: change.updatedAt };
    if (change.url !== undefined) row.url = change.url;
    if (change.description !== undefined) row.description = change.description;
    if (change.events !== undefined) row.events = change.events;
    if (change.objectTypes !== undefined) row.object_types = [...change.objectTypes];
    if (change.status !== undefined) row.status = change.status;
    if (change.disabledReason !== undefined) row.disabled_reason = change.disabledReason;
    if (change.secret !== undefined) row.secret = change.secret;
    if (change.previousSecret !== undefined) row.previous_secret = change.previousSecret;
    if (change.previousSecretExpiresAt !== undefined) row.previous_secret_expires_at = change.previousSecretExpiresAt;
    if (change.failingSince !== undefined) row.failing_since = change.failingSince;
    const [updated] = (await this.db('webhook_endpoints').where({ id }).update(row).returning('*')) as EndpointRow[];
    return toEndpoint(updated as EndpointRow);
  }

  async deleteEndpoint(id: string): Promise<void> {
    await this.db('webhook_endpoints').where({ id }).del();
  }

  private deliveries() {
    return this.db('webhook_deliveries as d').join('events as e', 'e.id', 'd.event_id').select(DELIVERY_COLUMNS);
  }

  async findDelivery(endpointId: string, id: string): Promise<WebhookDelivery | undefined> {
    const row = (await this.deliveries().where({ 'd.endpoint_id': endpointId, 'd.id': id }).first()) as DeliveryRow | undefined;
    return row ? toDelivery(row) : undefined;
  }

  async findDeliveryById(id: string, options: { forUpdate?: boolean } = {}): Promise<WebhookDelivery | undefined> {
    const query = this.deliveries().where('d.id', id);
    if (options.forUpdate) query.forUpdate('d');
    const row = (await query.first()) as DeliveryRow | undefined;
    return row ? toDelivery(row) : undefined;
  }

  async findDeliveryForEvent(endpointId: string, eventId: string): Promise<WebhookDelivery | undefined> {
    const row = (await this.deliveries().where({ 'd.endpoint_id': endpointId, 'd.event_id': eventId }).first()) as DeliveryRow | undefined;
    return row ? toDelivery(row) : undefined;
  }

  /** Newest first, `limit + 1` rows (400 when the cursor is not a delivery of the endpoint). */
  async pageDeliveries(endpointId: string, filter: { status?: DeliveryStatus; limit: number; startingAfter?: string }): Promise<WebhookDelivery[]> {
    const query = this.deliveries().where('d.endpoint_id', endpointId);
    if (filter.status) query.where('d.status', filter.status);
    const rows = await DELIVERIES.rows<DeliveryRow>(this.db, query, { endpoint_id: endpointId }, filter);
    return rows.map(toDelivery);
  }

  /**
   * Claims up to `limit` due deliveries of enabled endpoints, fairly: an endpoint gets at most
   * `perEndpoint` attempts under way and an organisation `perOrganization` (counting the
   * attempts other workers have under way: `leased_until` in the future), and the chosen ones
   * alternate between organisations (each organisation's first due delivery before any
   * organisation's second) and, within one, between its endpoints. Each claimed row is locked
   * with SKIP LOCKED (it goes to one worker, on any instance) and leased: `next_attempt_at` and
   * `leased_until` pushed to `leaseUntil`, so a worker that dies mid-attempt leaves it to be
   * claimed again, and stops counting as under way, once the lease ends.
   */
  async claimDue(now: Date, leaseUntil: Date, limit: number, bounds: { perEndpoint: number; perOrganization: number }): Promise<string[]> {
    if (limit <= 0) return [];
    const result = await this.db.raw(
      `WITH busy AS (
         SELECT endpoint_id, organization_id FROM webhook_deliveries WHERE leased_until IS NOT NULL AND leased_until > :now),
       endpoint_busy AS (SELECT endpoint_id, count(*) AS n FROM busy GROUP BY endpoint_id),
       organization_busy AS (SELECT organization_id, count(*) AS n FROM busy GROUP BY organization_id),
       candidates AS (
         SELECT c.id, w.organization_id, c.next_attempt_at, c.endpoint_rank
         FROM webhook_endpoints w
         LEFT JOIN endpoint_busy eb ON eb.endpoint_id = w.id
         CROSS JOIN LATERAL (
           SELECT d.id, d.next_attempt_at, row_number() OVER (ORDER BY d.next_attempt_at, d.id) AS endpoint_rank
           FROM webhook_deliveries d
           WHERE d.endpoint_id = w.id AND d.status IN ('pending', 'failed') AND d.next_attempt_at IS NOT NULL AND d.next_attempt_at <= :now
           ORDER BY d.next_attempt_at, d.id
           LIMIT GREATEST(:perEndpoint - COALESCE(eb.n, 0), 0)) c
         WHERE w.status = 'enabled'),
       ranked AS (
         SELECT c.*, row_number() OVER (PARTITION BY c.organization_id ORDER BY c.endpoint_rank, c.next_attempt_at, c.id) AS organization_rank
         FROM candidates c),
       chosen AS (
         SELECT r.id FROM ranked r LEFT JOIN organization_busy ob ON ob.organization_id = r.organization_id
         WHERE r.organization_rank <= :perOrganization - COALESCE(ob.n, 0)
         ORDER BY r.organization_rank, r.next_attempt_at, r.id
         LIMIT :limit)
       UPDATE webhook_deliveries SET next_attempt_at = :leaseUntil, leased_until = :leaseUntil, updated_at = :now
       WHERE id IN (
         SELECT d.id FROM webhook_deliveries d
         WHERE d.id IN (SELECT id FROM chosen) AND d.status IN ('pending', 'failed') AND d.next_attempt_at <= :now
         FOR UPDATE SKIP LOCKED)
       RETURNING id`,
      { now, leaseUntil, limit, perEndpoint: bounds.perEndpoint, perOrganization: bounds.perOrganization },
    );
    return (result as { rows: { id: string }[] }).rows.map((row) => row.id);
  }

  /**
   * Leases one delivery for an attempt made outside the dispatcher (the test event, a manual
   * retry): a dispatcher run meanwhile does not claim it (no second send while it is under
   * way); the attempt's record sets its next time, and a worker dying mid-attempt leaves it
   * to the dispatcher once the lease ends.
   */
  async lease(id: string, leaseUntil: Date, now: Date): Promise<void> {
    await this.db('webhook_deliveries').where({ id }).whereIn('status', ['pending', 'failed']).update({ next_attempt_at: leaseUntil, leased_until: leaseUntil, updated_at: now });
  }

  async recordAttempt(id: string, change: { status: DeliveryStatus; attempt: DeliveryAttempt; nextAttemptAt: Date | null; now: Date }): Promise<void> {
    await this.db('webhook_deliveries')
      .where({ id })
      .update({
        status: change.status,
        attempt_count: this.db.raw('attempt_count + 1'),
        // The last 50 attempts are kept (a delivery retried by hand again and again stays small).
        attempts: this.db.raw(`CASE WHEN jsonb_array_length(attempts) >= 50 THEN (attempts - 0) || ?::jsonb ELSE attempts || ?::jsonb END`, [
          JSON.stringify([change.attempt]),
          JSON.stringify([change.attempt]),
        ]),
        next_attempt_at: change.nextAttemptAt,
        leased_until: null,
        updated_at: change.now,
      });
  }
}
