import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { ApiKeyCaller, ApiKeyScope, Caller, Schemas } from '../../contract';
import { toListPage, type ListPage, type PageRequest } from '../../contract';
import { withTransaction } from '../../db/transaction';
import { systemClock, type Clock } from '../../clock';
import { UnauthorizedError, ValidationError } from '../../errors';
import { EventRepository } from '../events';
import { ApiKeyNotActiveError, ApiKeyNotFoundError, TooManyApiKeysError } from './api-key-errors';
import { displayPrefix, formatApiKey, parseApiKey, PUBLIC_ID_LENGTH, randomBase62, SECRET_LENGTH, type ApiKeyEnvironment } from './api-key-format';
import { ApiKeyRepository, type ApiKeyRecord } from './api-key-repository';
import { normalizeScopes } from './api-key-scopes';
import { apiKeySecretMatches, hashApiKeySecret } from './api-key-secret';
import { readConnection } from '../../db/read-routing';

export const MAX_ACTIVE_API_KEYS = 20;
export const DEFAULT_API_KEY_LIFETIME_DAYS = 90;
const DAY_MS = 86_400_000;
/** A key lives at most one year (366 days, so "one year from today" always fits). */
export const MAX_API_KEY_LIFETIME_MS = 366 * DAY_MS;
export const DEFAULT_ROLL_GRACE_SECONDS = 86_400;
/** `last_used_at` is written at most once in this long per key. */
export const LAST_USED_RESOLUTION_MS = 60_000;

export type ApiKeyView = Schemas['ApiKey'];
export type ApiKeyWithSecretView = Schemas['ApiKeyWithSecret'];

export interface ApiKeyServiceOptions {
  /** API_KEY_PEPPER: the HMAC key of stored secrets. */
  pepper: string;
  /** `live` in production (sk_live_), `test` elsewhere (sk_test_). */
  environment: ApiKeyEnvironment;
  clock?: Clock;
  randomBytes?: (size: number) => Buffer;
}

export interface NewApiKey {
  name: string;
  scopes: readonly ApiKeyScope[];
  /** ISO 8601; 90 days from now when absent, at most one year ahead. */
  expiresAt?: string;
}

/** Whom a key speaks for, or why it is refused (the message of the 401). */
export type ApiKeyDecision = { caller: Caller & { apiKey: ApiKeyCaller } } | { refusal: string };

const INVALID = 'The API key is invalid.';

function statusOf(key: Pick<ApiKeyRecord, 'revokedAt' | 'expiresAt'>, now: Date): ApiKeyView['status'] {
  if (key.revokedAt) return 'revoked';
  return key.expiresAt.getTime() <= now.getTime() ? 'expired' : 'active';
}

/**
 * Keys of an organisation's servers: created, listed, rolled and revoked by its
 * owner or admin, each change with its event in the same transaction; and the check of a key
 * presented on a request (src/http/authenticate.ts asks), which reads the key's row on every
 * request, so a revocation refuses the key from its commit on.
 */
export class ApiKeyService {
  private readonly clock: Clock;
  private readonly randomBytes: (size: number) => Buffer;

  constructor(
    private readonly knex: Knex,
    private readonly options: ApiKeyServiceOptions,
  ) {
    this.clock = options.clock ?? systemClock;
    this.randomBytes = options.randomBytes ?? crypto.randomBytes;
  }

  /**
   * The caller a presented key speaks for. A key of another environment or with a wrong
   * checksum is refused without any database work; otherwise one query by its public id,
   * its secret compared in constant time, then its state (revoked, expired, a rolled secret
   * past its grace). A use is recorded at most once a minute.
   */
  async authenticate(token: string, clientIp: string): Promise<ApiKeyDecision> {
    const parsed = parseApiKey(token, this.options.environment);
    if (!parsed) return { refusal: INVALID };
    const credential = await new ApiKeyRepository(this.knex).credential(parsed.publicId);
    if (!credential || !apiKeySecretMatches(this.options.pepper, parsed.publicId, parsed.secret, credential.secretHash)) return { refusal: INVALID };
    const now = this.clock();
    if (credential.revokedAt) return { refusal: 'The API key is revoked.' };
    if (credential.expiresAt.getTime() <= now.getTime()) return { refusal: 'The API key has expired.' };
    if (credential.retiresAt && credential.retiresAt.getTime() <= now.getTime()) return { refusal: 'This secret of the API key was rolled and no longer works: use the new one.' };
    if (!credential.lastUsedAt || now.getTime() - credential.lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS) {
      await new ApiKeyRepository(this.knex).recordUse(credential.keyId, now, clientIp, new Date(now.getTime() - LAST_USED_RESOLUTION_MS));
    }
    return {
      caller: {
        userId: credential.heldBy,
        sessionId: '',
        isAdmin: false,
        apiKey: { id: credential.keyId, organizationId: credential.organizationId, scopes: credential.scopes },
      },
    };
  }

  /**
   * The check of a write made with the key, inside the write's transaction just before COMMIT
   * (the pipeline's transaction guard): the key's row read FOR SHARE, so a revocation (which
   * locks the row FOR UPDATE) either waits for this write to commit, or has committed and
   * this write is rolled back with 401. Nothing is created with a key after its revocation.
   */
  guard(keyId: string): (trx: Knex.Transaction) => Promise<void> {
    return async (trx) => {
      const state = await new ApiKeyRepository(trx).stateForShare(keyId);
      if (!state || state.revokedAt) throw new UnauthorizedError('The API key is revoked.');
      if (state.expiresAt.getTime() <= this.clock().getTime()) throw new UnauthorizedError('The API key has expired.');
    };
  }

  async list(organizationId: string, page: PageRequest): Promise<ListPage<ApiKeyView>> {
    const now = this.clock();
    const rows = await new ApiKeyRepository(readConnection(this.knex)).list(organizationId, page);
    return toListPage(
      rows.map((row) => this.present(row, now)),
      page.limit,
    );
  }

  async get(organizationId: string, keyId: string): Promise<ApiKeyView> {
    const key = await new ApiKeyRepository(this.knex).find(organizationId, keyId);
    if (!key) throw new ApiKeyNotFoundError();
    return this.present(key, this.clock());
  }

  /** A new key of the organisation, in `db`'s transaction (the pipeline's, which the Idempotency-Key completes in). */
  async create(db: Knex | Knex.Transaction, organizationId: string, actorUserId: string, input: NewApiKey): Promise<ApiKeyWithSecretView> {
    return withTransaction(db, (trx) => this.createIn(trx, organizationId, actorUserId, input));
  }

  private async createIn(trx: Knex.Transaction, organizationId: string, actorUserId: string, input: NewApiKey): Promise<ApiKeyWithSecretView> {
    const now = this.clock();
    const expiresAt = input.expiresAt === undefined ? new Date(now.getTime() + DEFAULT_API_KEY_LIFETIME_DAYS * DAY_MS) : new Date(input.expiresAt);
    if (expiresAt.getTime() <= now.getTime()) throw ValidationError.field('body.expires_at', 'expires_at must be in the future.');
    if (expiresAt.getTime() - now.getTime() > MAX_API_KEY_LIFETIME_MS) throw ValidationError.field('body.expires_at', 'expires_at must be at most one year ahead.');
    const scopes = normalizeScopes(input.scopes);
    const keys = new ApiKeyRepository(trx);
    await keys.lockOrganization(organizationId);
    if ((await keys.countActive(organizationId, now)) >= MAX_ACTIVE_API_KEYS) throw new TooManyApiKeysError(MAX_ACTIVE_API_KEYS);
    const keyId = await keys.insert({ organizationId, name: input.name, scopes, environment: this.options.environment, createdBy: actorUserId, createdAt: now, expiresAt });
    const secret = await this.newSecret(keys, keyId, now);
    const key = await this.mustFind(keys, organizationId, keyId);
    await new EventRepository(trx).record({
      subjectType: 'api_key',
      subjectId: keyId,
      type: 'api_key.created',
      actorUserId,
      payload: { organization_id: organizationId, name: key.name, scopes: key.scopes, prefix: displayPrefix(key.environment, key.publicId), expires_at: key.expiresAt.toISOString() },
      occurredAt: now,
      organizationId,
      object: this.present(key, now),
      previousStatus: null,
    });
    return { ...this.present(key, now), secret };
  }

  async roll(
    db: Knex | Knex.Transaction,
    organizationId: string,
    keyId: string,
    actorUserId: string,
    expireCurrentInSeconds = DEFAULT_ROLL_GRACE_SECONDS,
  ): Promise<ApiKeyWithSecretView> {
    const now = this.clock();
    return withTransaction(db, async (trx) => {
      const keys = new ApiKeyRepository(trx);
      const current = await keys.find(organizationId, keyId, { forUpdate: true });
      if (!current) throw new ApiKeyNotFoundError();
      const status = statusOf(current, now);
      if (status !== 'active') throw new ApiKeyNotActiveError(status);
      const retiresAt = new Date(now.getTime() + expireCurrentInSeconds * 1000);
      await keys.retireCurrentSecret(keyId, retiresAt);
      const secret = await this.newSecret(keys, keyId, now);
      const key = await this.mustFind(keys, organizationId, keyId);
      await new EventRepository(trx).record({
        subjectType: 'api_key',
        subjectId: keyId,
        type: 'api_key.rolled',
        actorUserId,
        payload: {
          organization_id: organizationId,
          previous_prefix: displayPrefix(current.environment, current.publicId),
          prefix: displayPrefix(key.environment, key.publicId),
          previous_secret_expires_at: retiresAt.toISOString(),
        },
        occurredAt: now,
        organizationId,
        object: this.present(key, now),
        previousStatus: status,
      });
      return { ...this.present(key, now), secret };
    });
  }

  /** Revokes at once; revoking a revoked key answers it unchanged (no second event). */
  async revoke(organizationId: string, keyId: string, actorUserId: string): Promise<ApiKeyView> {
    const now = this.clock();
    return withTransaction(this.knex, async (trx) => {
      const keys = new ApiKeyRepository(trx);
      const current = await keys.find(organizationId, keyId, { forUpdate: true });
      if (!current) throw new ApiKeyNotFoundError();
      if (current.revokedAt) return this.present(current, now);
      await keys.revoke(keyId, actorUserId, now);
      const revoked = this.present(await this.mustFind(keys, organizationId, keyId), now);
      await new EventRepository(trx).record({
        subjectType: 'api_key',
        subjectId: keyId,
        type: 'api_key.revoked',
        actorUserId,
        payload: { organization_id: organizationId, prefix: displayPrefix(current.environment, current.publicId) },
        occurredAt: now,
        organizationId,
        object: revoked,
        previousStatus: statusOf(current, now),
      });
      return revoked;
    });
  }

  /**
   * The caller (an owner or admin: the operation's rule) takes the key over: it answers for
   * them from now on, and outlives its creator's loss of access. An active key only; taking
   * over a key one already holds answers it unchanged (no second event).
   */
  async transfer(trx: Knex.Transaction, organizationId: string, keyId: string, actorUserId: string): Promise<ApiKeyView> {
    const now = this.clock();
    const keys = new ApiKeyRepository(trx);
    const current = await keys.find(organizationId, keyId, { forUpdate: true });
    if (!current) throw new ApiKeyNotFoundError();
    const status = statusOf(current, now);
    if (status !== 'active') throw new ApiKeyNotActiveError(status);
    if (current.heldBy === actorUserId) return this.present(current, now);
    await keys.transfer(keyId, actorUserId);
    const key = this.present(await this.mustFind(keys, organizationId, keyId), now);
    await new EventRepository(trx).record({
      subjectType: 'api_key',
      subjectId: keyId,
      type: 'api_key.transferred',
      actorUserId,
      payload: { organization_id: organizationId, prefix: key.prefix, previous_holder: current.heldBy, holder: actorUserId },
      occurredAt: now,
      organizationId,
      object: key,
      previousStatus: status,
    });
    return key;
  }

  private async newSecret(keys: ApiKeyRepository, keyId: string, now: Date): Promise<string> {
    const publicId = randomBase62(PUBLIC_ID_LENGTH, this.randomBytes);
    const secret = randomBase62(SECRET_LENGTH, this.randomBytes);
    const token = formatApiKey(this.options.environment, publicId, secret);
    await keys.insertSecret(keyId, { publicId, secretHash: hashApiKeySecret(this.options.pepper, publicId, secret), last4: token.slice(-4) }, now);
    return token;
  }

  private async mustFind(keys: ApiKeyRepository, organizationId: string, keyId: string): Promise<ApiKeyRecord> {
    const key = await keys.find(organizationId, keyId);
    if (!key) throw new ApiKeyNotFoundError();
    return key;
  }

  private present(key: ApiKeyRecord, now: Date): ApiKeyView {
    return {
      id: key.id,
      name: key.name,
      prefix: displayPrefix(key.environment, key.publicId),
      last4: key.last4,
      scopes: key.scopes,
      status: statusOf(key, now),
      created_at: key.createdAt.toISOString(),
      expires_at: key.expiresAt.toISOString(),
      last_used_at: key.lastUsedAt?.toISOString() ?? null,
      last_used_ip: key.lastUsedIp,
      created_by: key.createdBy,
      held_by: key.heldBy,
      revoked_reason: key.revokedReason,
    };
  }
}
