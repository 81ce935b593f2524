import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { ConflictError, NotFoundError, UnprocessableError } from '../../errors';
import { withTransaction } from '../../db/transaction';
import { idempotencyRepository, type IdempotencyRecord, type IdempotencyScope } from './idempotency-repository';
import { PendingKey, withPendingKey, type ClaimAttempt, type ClaimedKey } from './pending-key';
import { KEY_FORMAT, keyAlreadyProcessed, keyReused, requestHash } from './idempotency-answers';

export { canonicalJson, keyAlreadyProcessed, keyReused, requestHash, validateIdempotencyKey, type ProducedResource } from './idempotency-answers';

/**
 * Idempotency for every POST whose contract declares the Idempotency-Key header. It is applied
 * by the HTTP pipeline (src/http/mount-operations.ts), never by a service: the pipeline checks
 * the key, scopes it to the operationId and the caller, and runs the handler through `perform`,
 * handing it the transaction the key is completed in; the handler names the resource.
 *
 * Rules (IETF draft-ietf-httpapi-idempotency-key-header and Stripe's behaviour):
 * - Keys are scoped to (user, operation) — to (organisation, operation) when an API key calls —
 *   and kept `ttlHours` (>= 24 h, IDEMPOTENCY_TTL_HOURS).
 * - The key is claimed before the effect runs, so checks that depend on stored state
 *   (balances, recipients) run after the claim: a replay of a processed key answers 409 with
 *   the resource it produced even when the same request would now be refused. A refusal (a
 *   400 included) rolls back and releases the claim: it does not consume the key.
 * - The first request claims the key (`in_progress`, a fencing token and a lease) as the first
 *   statement of ONE transaction, runs the effect in it, and ends it by completing the key row
 *   with the response status, body and resource, on condition that the claim token is still
 *   its own. The claim, the completed key, its request hash and the response therefore commit
 *   or roll back together with the effect: one commit per request, not two.
 * - A later request with the same key and the same request hash: 409
 *   `IdempotencyKeyAlreadyProcessed`, `details` {resource_type, resource_id, status} and a
 *   `Location` header; while the first is still running: 409 `ConcurrentOperation` with
 *   `Retry-After`. "Still running" is the key's transaction-scoped advisory lock, held by the
 *   request's transaction: the second request is told at once, never left waiting on the first
 *   (a different request under that key too: which one the key will belong to is not known
 *   yet). Replays of a completed key are answered from its row even while another replay
 *   holds the lock.
 * - The same key with a different request (a different body): 422 `IdempotencyKeyReused`
 *   (the IETF draft's status for a reused key with another payload), with the same
 *   `details` and `Location` when the key already produced a resource.
 * - When the effect throws (InsufficientFunds, a frozen wallet, a crash...) the transaction
 *   rolls back, the claim with it: the key was not consumed and may be retried. A request
 *   that dies mid-way loses its connection, and PostgreSQL rolls its claim back the same way.
 * - An in_progress row that outlived its request (written by a release that claimed keys in
 *   a transaction of their own, or by hand) is taken over by the next request with the key
 *   once its lease lapses (`leaseSeconds`). The fencing token makes a late completion by the
 *   old request impossible.
 * - An expired key is free again: the next request claims it afresh.
 */

export interface IdempotentRequest {
  userId: string;
  /**
   * Set when an organisation's API key calls: the key is scoped to the
   * organisation (every key of it, not the user who created them) and the operation.
   */
  organizationId?: string;
  /** The operationId, e.g. `createTransfer`. */
  operation: string;
  /** The Idempotency-Key header. */
  key: string;
  /** What identifies the request besides the key: its body, and path parameters if any. */
  request?: unknown;
  /** Its hash when already computed (the pipeline computes it as it checks the key). */
  requestHash?: string;
}

export interface IdempotentResource {
  /** `transfer`, `escrow`, ... */
  type: string;
  id: string;
  status: string;
  /** Relative URL of the resource, e.g. `/api/transfers/<id>` (the Location of a replay). */
  location: string;
}

export interface IdempotentOutcome<T> {
  result: T;
  /** The HTTP status the operation answers with (stored for GET /idempotency-keys/{key}). */
  responseStatus: number;
  /**
   * The body, stored with the key when given. The HTTP pipeline gives none: a replay answers
   * from the resource (409 with its type, id, status and Location), never from a stored body,
   * so no secret shown once (an API key's, a webhook signing secret) is kept with a key.
   */
  responseBody?: unknown;
  resource: IdempotentResource;
}

/**
 * An effect that refuses but keeps what it did (an expired quote is canceled, then 409
 * QuoteExpired): its transaction commits, the key's claim is released in it (the key was not
 * consumed), then `refusal` is thrown.
 */
export interface RefusedOutcome {
  refusal: Error;
}

function isRefusal<T>(outcome: IdempotentOutcome<T> | RefusedOutcome): outcome is RefusedOutcome {
  return 'refusal' in outcome;
}

/** Reads the current status of a produced resource, so a replay reports e.g. a settled transfer. */
export type ResourceStatusReader = (db: Knex | Knex.Transaction, resourceId: string) => Promise<string | undefined>;

export interface IdempotencyServiceOptions {
  ttlHours: number;
  leaseSeconds?: number;
}


/** An operation on the one write path: its effect claims the key in its read and completes it in its apply. */
export interface KeyClaimedInRead {
  /** The status the operation answers with unless it says otherwise. */
  responseStatus: number;
}

export interface IdempotencyKeyView {
  key: string;
  operation: string;
  status: 'in_progress' | 'completed';
  request_hash: string;
  response_status: number | null;
  resource: { type: string; id: string; status: string; location: string } | null;
  created_at: string;
  completed_at: string | null;
  expires_at: string;
}

/** A claim is short-lived (one transaction); a second later it has usually completed. */
const CONCURRENT_RETRY_AFTER_SECONDS = 1;
/** A claim older than this is taken for abandoned (its request died): Retry-After then says when its lease lapses. */
const PRESUMED_ABANDONED_AFTER_MS = 5_000;

/** What a completed key records of the answer: its status and the resource it names. */
function completionOf(outcome: IdempotentOutcome<unknown>) {
  return {
    responseStatus: outcome.responseStatus,
    resourceType: outcome.resource.type,
    resourceId: outcome.resource.id,
    resourceStatus: outcome.resource.status,
    resourceLocation: outcome.resource.location,
  };
}

export class IdempotencyService {
  private readonly ttlHours: number;
  private readonly leaseSeconds: number;
  private readonly statusReaders = new Map<string, ResourceStatusReader>();

  constructor(
    private readonly knex: Knex,
    options: IdempotencyServiceOptions,
  ) {
    if (options.ttlHours < 24) throw new RangeError('idempotency keys are kept at least 24 hours');
    this.ttlHours = options.ttlHours;
    this.leaseSeconds = options.leaseSeconds ?? 60;
  }

  /** How long a key lives and how long an in_progress claim holds it (for operations that claim keys in the database). */
  get terms(): { ttlHours: number; leaseSeconds: number } {
    return { ttlHours: this.ttlHours, leaseSeconds: this.leaseSeconds };
  }

  /** Lets replays of `resourceType` report the resource's current status. */
  registerResourceStatus(resourceType: string, reader: ResourceStatusReader): void {
    this.statusReaders.set(resourceType, reader);
  }

  /**
   * Runs `effect` in one transaction; with a key (`request`), claims it first and completes it
   * in that transaction with the outcome's response and resource. Without one, the effect runs
   * alone, in the same kind of transaction. An operation on the one write path (`claim`) claims
   * its key in its locked read and completes it in its apply (executeClaimedInRead).
   */
  async perform<T>(
    request: IdempotentRequest | undefined,
    effect: (trx: Knex.Transaction) => Promise<IdempotentOutcome<T> | RefusedOutcome>,
    claim?: KeyClaimedInRead,
  ): Promise<T> {
    if (!request) {
      const outcome = await withTransaction(this.knex, effect);
      if (isRefusal(outcome)) throw outcome.refusal;
      return outcome.result;
    }
    return this.execute(request, effect, claim);
  }

  /** Claims `request.key` (already checked: validateIdempotencyKey), runs `effect` and completes the key, all in one transaction. */
  async execute<T>(
    request: IdempotentRequest,
    effect: (trx: Knex.Transaction) => Promise<IdempotentOutcome<T> | RefusedOutcome>,
    claimedInRead?: KeyClaimedInRead,
  ): Promise<T> {
    const hash = request.requestHash ?? requestHash(request.request);
    const scope = { userId: request.userId, organizationId: request.organizationId, operation: request.operation, key: request.key };
    let refused: RefusedOutcome | undefined;
    const result = await withTransaction(this.knex, async (trx) => {
      refused = undefined;
      if (claimedInRead) return this.executeClaimedInRead(trx, scope, hash, effect, claimedInRead);
      // The claim is the transaction's first statement: a thrown effect (a refusal, a crash)
      // rolls it back with everything else, so the key is free again with nothing to release.
      const claim = await this.claim(trx, scope, hash);
      const outcome = await effect(trx);
      if (isRefusal(outcome)) {
        // What the effect did commits; the key does not: its claim goes in the same transaction.
        await idempotencyRepository.release(trx, claim.id, claim.claimToken);
        refused = outcome;
        return undefined as T;
      }
      // Fenced by the claim token: if a takeover changed the row meanwhile, this updates
      // nothing and the whole effect rolls back.
      const completed = await idempotencyRepository.complete(trx, claim.id, claim.claimToken, { ...completionOf(outcome), responseBody: outcome.responseBody });
      if (!completed) throw this.concurrent();
      return outcome.result;
    });
    if (refused) throw refused.refusal;
    return result;
  }

  /**
   * The same rules, for an operation on the one write path: the key is claimed by the first
   * statement the effect sends (its locked read: write_claim) and completed by its last (the
   * decision's apply), so the request costs no statement of its own for the key. What the read
   * did not claim is settled here, by the same claim as every other operation's.
   */
  private async executeClaimedInRead<T>(
    trx: Knex.Transaction,
    scope: IdempotencyScope,
    hash: string,
    effect: (trx: Knex.Transaction) => Promise<IdempotentOutcome<T> | RefusedOutcome>,
    options: KeyClaimedInRead,
  ): Promise<T> {
    const key = this.pendingKey({ ...scope, requestHash: hash }, options.responseStatus);
    const outcome = await withPendingKey(trx, key, () => effect(trx));
    if (isRefusal(outcome)) throw new Error(`operation ${scope.operation} claims its key in its read: it refuses by throwing`);
    if (!key.claimed) throw new Error(`operation ${scope.operation} claims its key in its read, and read nothing`);
    const completed = key.completedWith;
    if (completed) {
      const { resource } = outcome;
      if (completed.responseStatus !== outcome.responseStatus || completed.resourceType !== resource.type || completed.resourceId !== resource.id || completed.resourceStatus !== resource.status) {
        throw new Error(`operation ${scope.operation} completed its key with another response than the one it answers`);
      }
      return outcome.result;
    }
    const done = await idempotencyRepository.complete(trx, key.claimed.id, key.claimed.claimToken, completionOf(outcome));
    if (!done) throw this.concurrent();
    return outcome.result;
  }

  /**
   * The key of a request on the one write path, to be claimed by the statement that reads (or,
   * in a window, applies) its decision and completed by the one that applies it; what that claim
   * did not get is settled by `claim`, the rules of every other operation's key.
   */
  pendingKey(scope: IdempotencyScope & { requestHash: string }, responseStatus: number): PendingKey {
    const { requestHash: hash, ...keyScope } = scope;
    const claimToken = crypto.randomUUID();
    return new PendingKey(keyScope, hash, claimToken, this.terms, responseStatus, (db, first) => this.claim(db, keyScope, hash, first, claimToken));
  }

  /** GET /idempotency-keys/{key}: the caller's live record of `key` (the newest when several operations used it). */
  async describe(userId: string, key: string, operation?: string): Promise<IdempotencyKeyView> {
    const [record] = KEY_FORMAT.test(key) ? await idempotencyRepository.findLiveByKey(this.knex, userId, key, operation) : [];
    if (!record) throw new NotFoundError('No live idempotency key of yours has this value.', 'IdempotencyKeyNotFound');
    let resource: IdempotencyKeyView['resource'] = null;
    if (record.status === 'completed' && record.resourceType && record.resourceId) {
      resource = {
        type: record.resourceType,
        id: record.resourceId,
        status: await this.currentStatus(this.knex, record),
        location: record.resourceLocation ?? '',
      };
    }
    return {
      key: record.key,
      operation: record.operation,
      status: record.status,
      request_hash: record.requestHash,
      response_status: record.responseStatus,
      resource,
      created_at: record.createdAt.toISOString(),
      completed_at: record.completedAt?.toISOString() ?? null,
      expires_at: record.expiresAt.toISOString(),
    };
  }

  /** Deletes expired keys (they are reusable anyway); returns how many went. */
  purgeExpired(limit = 1000): Promise<number> {
    return idempotencyRepository.purgeExpired(this.knex, limit);
  }

  /**
   * Claims the key in `trx`. A request holding the same key right now (its transaction holds
   * the key's advisory lock): 409 ConcurrentOperation at once, never a wait. A key that exists
   * (committed) is answered from its row: a replay, a reuse, or a claim left in_progress by a
   * request of an earlier release that died (taken over once its lease lapses), or taken
   * over when it expired.
   */
  private async claim(trx: Knex.Transaction, scope: IdempotencyScope, hash: string, first?: ClaimAttempt, ownToken?: string): Promise<ClaimedKey> {
    const input = { ...scope, requestHash: hash, leaseSeconds: this.leaseSeconds, ttlHours: this.ttlHours };
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const { held, claimed } = attempt === 0 && first ? first : await idempotencyRepository.claimInTransaction(trx, { ...input, claimToken: crypto.randomUUID() });
      if (claimed) return claimed;
      const existing = await idempotencyRepository.find(trx, scope);
      const now = Date.now();
      // Completed by this very request in a run whose commit went through unanswered: its answer is the resource it made.
      if (ownToken !== undefined && existing?.status === 'completed' && existing.claimToken === ownToken && existing.resourceId) {
        throw new CompletedByThisRequest(existing.resourceId);
      }
      if (!held) {
        // Someone holds the key's lock: a running first request, or a replay of a finished key
        // being answered. A completed key that has not expired never changes, so parallel
        // replays all get its answer; otherwise it is in use.
        if (existing?.status === 'completed' && existing.expiresAt.getTime() > now) throw await this.answerFrom(trx, existing, hash);
        throw this.concurrent();
      }
      if (!existing) continue; // purged between our insert and our read: try again
      const expired = existing.expiresAt.getTime() <= now;
      const abandoned = existing.status === 'in_progress' && existing.lockedUntil.getTime() <= now;
      if (expired || abandoned) {
        const taken = await idempotencyRepository.takeOver(trx, existing.id, { ...input, claimToken: crypto.randomUUID() });
        if (taken) return taken;
        continue; // completed or taken over meanwhile: look again
      }
      if (existing.status === 'in_progress' && existing.requestHash === hash) throw this.concurrent(this.retryAfterSeconds(existing, now));
      throw await this.answerFrom(trx, existing, hash);
    }
    throw this.concurrent();
  }

  /**
   * The refusal of a request whose key already exists: 422 IdempotencyKeyReused for another
   * request, 409 IdempotencyKeyAlreadyProcessed for a replay. The resource's status is read on
   * `trx`'s own connection: a second one, taken while this transaction holds the first, could
   * wait for ever on a pool that transactions like this one have emptied.
   */
  private async answerFrom(trx: Knex.Transaction, existing: IdempotencyRecord, hash: string): Promise<Error> {
    if (existing.requestHash !== hash) return this.reused(trx, existing);
    return this.alreadyProcessed(trx, existing);
  }

  /** 409 ConcurrentOperation: the key is held by a request still running (or, once older, abandoned). */
  concurrent(retryAfterSeconds = CONCURRENT_RETRY_AFTER_SECONDS): ConflictError {
    return new ConflictError(
      'ConcurrentOperation',
      'A request with this Idempotency-Key is still being processed; retry later with the same key.',
      undefined,
      { 'Retry-After': String(retryAfterSeconds) },
    );
  }

  /**
   * A young claim is most likely a live request that completes within a second; an older one
   * most likely belongs to a request that died, and can be taken over only when its lease
   * lapses: Retry-After says when.
   */
  private retryAfterSeconds(claim: IdempotencyRecord, now: number): number {
    const leaseLeftMs = claim.lockedUntil.getTime() - now;
    const claimedAt = claim.lockedUntil.getTime() - this.leaseSeconds * 1000;
    if (now - claimedAt < PRESUMED_ABANDONED_AFTER_MS) return CONCURRENT_RETRY_AFTER_SECONDS;
    return Math.max(CONCURRENT_RETRY_AFTER_SECONDS, Math.ceil(leaseLeftMs / 1000));
  }

  /** A different request under a used key; names what the key produced, if anything, so a client can recover. */
  private async reused(db: Knex | Knex.Transaction, record: IdempotencyRecord): Promise<UnprocessableError> {
    const produced = record.status === 'completed' && record.resourceType && record.resourceId;
    return keyReused(record.operation, produced ? { ...(record as ProducedRecord), status: await this.currentStatus(db, record) } : undefined);
  }

  private async currentStatus(db: Knex | Knex.Transaction, record: IdempotencyRecord): Promise<string> {
    const reader = record.resourceType ? this.statusReaders.get(record.resourceType) : undefined;
    const current = reader && record.resourceId ? await reader(db, record.resourceId) : undefined;
    return current ?? record.resourceStatus ?? 'unknown';
  }

  private async alreadyProcessed(db: Knex | Knex.Transaction, record: IdempotencyRecord): Promise<ConflictError> {
    return keyAlreadyProcessed({ ...(record as ProducedRecord), status: await this.currentStatus(db, record) });
  }
}

type ProducedRecord = IdempotencyRecord & { resourceType: string; resourceId: string };

/** Thrown by a claim that finds the key completed by the same request (its claim token): the answer is the resource it made. */
export class CompletedByThisRequest extends Error {
  constructor(readonly resourceId: string) { super('the Idempotency-Key was completed by this request'); }
}
