import type { Knex } from 'knex';
import { prepared, queryPrepared } from '../../db/prepared';

type Db = Knex | Knex.Transaction;

export type IdempotencyStatus = 'in_progress' | 'completed';

export interface IdempotencyRecord {
  id: string;
  /** The user whose key it is; null for an organisation's key (an API key's). */
  userId: string | null;
  operation: string;
  key: string;
  requestHash: string;
  status: IdempotencyStatus;
  claimToken: string;
  lockedUntil: Date;
  responseStatus: number | null;
  responseBody: unknown;
  resourceType: string | null;
  resourceId: string | null;
  resourceStatus: string | null;
  resourceLocation: string | null;
  createdAt: Date;
  completedAt: Date | null;
  expiresAt: Date;
}

interface Row {
  id: string;
  user_id: string | null;
  organization_id: string | null;
  operation: string;
  key: string;
  request_hash: string;
  status: IdempotencyStatus;
  claim_token: string;
  locked_until: Date;
  response_status: number | null;
  response_body: unknown;
  resource_type: string | null;
  resource_id: string | null;
  resource_status: string | null;
  resource_location: string | null;
  created_at: Date;
  completed_at: Date | null;
  expires_at: Date;
}

function toRecord(row: Row): IdempotencyRecord {
  return {
    id: row.id,
    userId: row.user_id,
    operation: row.operation,
    key: row.key,
    requestHash: row.request_hash,
    status: row.status,
    claimToken: row.claim_token,
    lockedUntil: row.locked_until,
    responseStatus: row.response_status,
    responseBody: row.response_body,
    resourceType: row.resource_type,
    resourceId: row.resource_id,
    resourceStatus: row.resource_status,
    resourceLocation: row.resource_location,
    createdAt: row.created_at,
    completedAt: row.completed_at,
    expiresAt: row.expires_at,
  };
}

/** Whose key it is: the user's, or with `organizationId` (an API key calling) the organisation's. */
export interface IdempotencyScope {
  userId: string;
  organizationId?: string;
  operation: string;
  key: string;
}

/** The owner columns of a scope: a key belongs to a user or to an organisation, never both. */
function ownerOf(scope: { userId: string; organizationId?: string }): { user_id: string | null; organization_id: string | null } {
  return scope.organizationId ? { user_id: null, organization_id: scope.organizationId } : { user_id: scope.userId, organization_id: null };
}

export interface ClaimInput {
  userId: string;
  organizationId?: string;
  operation: string;
  key: string;
  requestHash: string;
  claimToken: string;
  leaseSeconds: number;
  ttlHours: number;
}

export interface Completion {
  responseStatus: number;
  /** Stored when given; none leaves the column NULL. */
  responseBody?: unknown;
  resourceType: string;
  resourceId: string;
  resourceStatus: string;
  resourceLocation: string;
}

/** What a write sets: each column with its own type, or SQL the database computes (`now() + ...`). */
type RowWrite = { [Column in keyof Row]?: Row[Column] | Knex.Raw };

const FRESH_CLAIM = (knex: Db, input: ClaimInput): RowWrite => ({
  request_hash: input.requestHash,
  status: 'in_progress',
  claim_token: input.claimToken,
  locked_until: knex.raw(`now() + make_interval(secs => ?)`, [input.leaseSeconds]),
  created_at: knex.fn.now(),
  expires_at: knex.raw(`now() + make_interval(hours => ?)`, [input.ttlHours]),
  response_status: null,
  response_body: null,
  resource_type: null,
  resource_id: null,
  resource_status: null,
  resource_location: null,
  completed_at: null,
});

/** Knex queries of the idempotency_keys table. */
export const idempotencyRepository = {
  /**
   * Claims the key inside the effect's own transaction, in one statement: first a
   * transaction-scoped advisory lock on the key's scope (taken at once or not at all: a request
   * holding the same key right now makes `held` false, and nothing is inserted), then the
   * in_progress row unless the key exists. The claim commits or rolls back with the effect, so
   * a refused or failed effect leaves nothing to release. The lock's key is the one
   * `write_claim` takes for a user's key.
   */
  async claimInTransaction(trx: Knex.Transaction, input: ClaimInput): Promise<{ held: boolean; claimed?: IdempotencyRecord }> {
    const byOrganization = input.organizationId !== undefined;
    const owner = ownerOf(input);
    const rows = await queryPrepared<Row & { held: boolean }>(
      trx,
      byOrganization ? 'idempotency_claim_org_in_transaction' : 'idempotency_claim_in_transaction',
      `WITH lock AS MATERIALIZED (SELECT pg_try_advisory_xact_lock(hashtextextended($1::text || ' ' || $3 || ' ' || $4, 0)) AS held),
            claimed AS (
              INSERT INTO idempotency_keys (user_id, organization_id, operation, key, request_hash, status, claim_token, locked_until, created_at, expires_at)
              SELECT $7::uuid, $8::uuid, $3, $4, $5, 'in_progress', $2::uuid, now() + make_interval(secs => $6::integer), now(), now() + make_interval(hours => $9::integer)
                FROM lock WHERE lock.held
              ON CONFLICT (${byOrganization ? 'organization_id' : 'user_id'}, operation, key) DO NOTHING
              RETURNING *)
       SELECT lock.held, claimed.* FROM lock LEFT JOIN claimed ON true`,
      [owner.organization_id ?? owner.user_id, input.claimToken, input.operation, input.key, input.requestHash, input.leaseSeconds, owner.user_id, owner.organization_id, input.ttlHours],
    );
    const row = rows[0] as (Row & { held: boolean }) | undefined;
    if (!row?.held) return { held: false };
    return row.id ? { held: true, claimed: toRecord(row) } : { held: true };
  },

  /**
   * Takes over an existing key that has expired, or whose in_progress claim outlived its
   * lease (the request that claimed it died, or is stuck). The new claim token fences the
   * old request out: its completion then updates nothing and its effect rolls back.
   */
  async takeOver(db: Db, id: string, input: ClaimInput): Promise<IdempotencyRecord | undefined> {
    const rows = await db<Row>('idempotency_keys')
      .where({ id })
      .andWhere((qb) => qb.where('expires_at', '<=', db.fn.now()).orWhere((q) => q.where('status', 'in_progress').andWhere('locked_until', '<=', db.fn.now())))
      .update(FRESH_CLAIM(db, input))
      .returning('*');
    const row = rows[0] as Row | undefined;
    return row ? toRecord(row) : undefined;
  },

  async find(db: Db, scope: IdempotencyScope): Promise<IdempotencyRecord | undefined> {
    const owner = ownerOf(scope);
    const query = db<Row>('idempotency_keys').where({ operation: scope.operation, key: scope.key });
    if (owner.organization_id) query.andWhere('organization_id', owner.organization_id);
    else query.andWhere('user_id', scope.userId);
    const row = await query.first();
    return row ? toRecord(row) : undefined;
  },

  /** The caller's unexpired records of one key (one per operation), newest first. */
  async findLiveByKey(db: Db, userId: string, key: string, operation?: string): Promise<IdempotencyRecord[]> {
    const query = db<Row>('idempotency_keys').where({ user_id: userId, key }).andWhere('expires_at', '>', db.fn.now());
    if (operation) query.andWhere({ operation });
    const rows = await query.orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]);
    return rows.map(toRecord);
  },

  async complete(trx: Knex.Transaction, id: string, claimToken: string, completion: Completion): Promise<boolean> {
    const count = await prepared(
      'idempotency_complete',
      trx('idempotency_keys').where({ id, claim_token: claimToken, status: 'in_progress' }).update({
        status: 'completed',
        response_status: completion.responseStatus,
        response_body: completion.responseBody === undefined ? null : JSON.stringify(completion.responseBody),
        resource_type: completion.resourceType,
        resource_id: completion.resourceId,
        resource_status: completion.resourceStatus,
        resource_location: completion.resourceLocation,
        completed_at: trx.fn.now(),
      }),
    );
    return count > 0;
  },

  /** Deletes this request's claim (the request was refused before any effect). */
  async release(db: Db, id: string, claimToken: string): Promise<void> {
    await db('idempotency_keys').where({ id, claim_token: claimToken, status: 'in_progress' }).del();
  },

  /**
   * Deletes up to `limit` expired keys; keys another instance's purge (or a request taking an
   * expired key over) holds are skipped, never waited for. Returns how many this call deleted.
   */
  async purgeExpired(db: Db, limit: number): Promise<number> {
    return db('idempotency_keys')
      .whereIn('id', db('idempotency_keys').select('id').where('expires_at', '<=', db.fn.now()).limit(limit).forUpdate().skipLocked())
      .del();
  },
};
