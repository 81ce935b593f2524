import type { Knex } from 'knex';
import { ValidationError } from '../../errors';
import { setLocal, withTransaction } from '../../db/transaction';
import type { ApiKeyScope, Role } from '../../contract';
import { EventRepository } from '../events';
import { callerMay } from '../organizations';
import { presentNetworkStatus } from './network-status-presenter';
import { StatusUnavailableError, VersionConflictError, VersionExhaustedError } from './network-status-errors';
import { NetworkStatusRepository, type NetworkStatusChange, type NetworkStatusRecord } from './network-status-repository';

/** The contract's range of `version`: 0 to 2147483646. */
export const MAX_VERSION = 2_147_483_646;

export interface NetworkStatusOptions {
  /** How long a change may wait for the status row lock (SET LOCAL lock_timeout). */
  lockTimeoutMs: number;
  /** How long any statement of a change may run (SET LOCAL statement_timeout). */
  statementTimeoutMs: number;
  /** Retry-After of a 503 StatusUnavailable. */
  retryAfterSeconds: number;
}

export const DEFAULT_NETWORK_STATUS_OPTIONS: NetworkStatusOptions = { lockTimeoutMs: 2_000, statementTimeoutMs: 5_000, retryAfterSeconds: 1 };

/** The caller's organisation, as the access policy resolved it. */
export interface CallerOrganization {
  id: string;
  status: string;
  /** The member's role; null for an API key, whose scopes decide. */
  role: Role | null;
  apiKeyScopes?: readonly ApiKeyScope[];
}

export type NetworkStatusView = NetworkStatusRecord & { canManage: boolean };

/** lock_not_available (lock_timeout), query_canceled (statement_timeout), or no pool connection in time. */
export function isStoreTimeout(error: unknown): boolean {
  const e = error as { code?: unknown; name?: unknown } | null;
  return e?.code === '55P03' || e?.code === '57014' || e?.name === 'KnexTimeoutError';
}

/**
 * The network opening status. A change is one compare-and-set UPDATE on the version, and its
 * audit record is written in the same transaction; a stale version is a 409, a store that
 * cannot answer in time a 503, and the version never wraps (422 VersionExhausted at the top).
 */
export class NetworkStatusService {
  private readonly options: NetworkStatusOptions;

  constructor(
    private readonly knex: Knex,
    options: Partial<NetworkStatusOptions> = {},
  ) {
    this.options = { ...DEFAULT_NETWORK_STATUS_OPTIONS, ...options };
  }

  /** Owner or admin (the PATCH rule of the access policy), or a key with its scope, of an active organisation. */
  canManage(organization: CallerOrganization): boolean {
    return organization.status === 'active' && callerMay('updateNetworkStatus', organization);
  }

  async get(organization: CallerOrganization): Promise<NetworkStatusView> {
    const record = await new NetworkStatusRepository(this.knex).find(organization.id);
    return { ...record, canManage: this.canManage(organization) };
  }

  async update(
    organization: CallerOrganization,
    actorUserId: string,
    input: { version: number; isOpen: boolean | null },
    requestId: string | null,
  ): Promise<NetworkStatusView> {
    if (!Number.isInteger(input.version) || input.version < 0 || input.version > MAX_VERSION) {
      throw ValidationError.field('body.version', `version must be an integer from 0 to ${MAX_VERSION}.`);
    }
    try {
      const after = await withTransaction(
        this.knex,
        async (trx) => {
          const repo = new NetworkStatusRepository(trx);
          await setLocal(trx, { lock_timeout: this.options.lockTimeoutMs, statement_timeout: this.options.statementTimeoutMs });
          if (input.version === MAX_VERSION) {
            const current = await repo.find(organization.id);
            throw current.version === MAX_VERSION ? new VersionExhaustedError(MAX_VERSION) : new VersionConflictError();
          }
          await repo.ensureRow(organization.id);
          const changed = await repo.compareAndSet(organization.id, input.version, input.isOpen, actorUserId);
          if (!changed) throw new VersionConflictError();
          await repo.insertChange({ organizationId: organization.id, actorUserId, before: changed.before, after: changed.after, requestId });
          // The event's object is the status as an owner or admin reads it (they may manage it).
          await new EventRepository(trx).record({
            subjectType: 'network_status',
            subjectId: organization.id,
            type: 'network_status.updated',
            actorUserId,
            occurredAt: changed.after.updatedAt ?? new Date(),
            organizationId: organization.id,
            object: presentNetworkStatus({ ...changed.after, canManage: true }),
            previousStatus: null,
          });
          return changed.after;
        },
        { retries: 0 },
      );
      return { ...after, canManage: this.canManage(organization) };
    } catch (error) {
      if (isStoreTimeout(error)) throw new StatusUnavailableError(this.options.retryAfterSeconds);
      throw error;
    }
  }

  /** The audit trail, newest change first; a cursor that is not a change of this organisation is a 400. */
  history(organizationId: string, limit: number, startingAfter?: string): Promise<NetworkStatusChange[]> {
    return new NetworkStatusRepository(this.knex).listChanges(organizationId, { limit, startingAfter });
  }
}
