import crypto from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConflictError, UnprocessableError, ValidationError } from '../../src/errors';
import { IdempotencyService, canonicalJson, keyAlreadyProcessed, keyReused, requestHash, validateIdempotencyKey } from '../../src/modules/idempotency';
import { idempotencyRepository } from '../../src/modules/idempotency/idempotency-repository';
import { testKnex } from '../support/database';
import { createUser } from '../support/factories';
import { failure, type Failure } from '../support/failures';

/**
 * The idempotency rules' exact answers: error names, messages, details, headers and the
 * Retry-After arithmetic, with expectations written out (not computed by the service).
 */
const knex = testKnex();
/**
 * Made in each test, not at import: a mutant that makes the constructor throw must fail
 * these tests, not stop the file from loading (Stryker's vitest runner counts a file that
 * fails to load as no test failed).
 */
const service = () => new IdempotencyService(knex, { ttlHours: 24, leaseSeconds: 60 });



const neverRuns = async (): Promise<never> => {
  throw new Error('the effect must not run');
};

/** An effect that produces a resource without moving money. */
const produce = (id: string, location: string) => async () => ({
  result: id,
  responseStatus: 201,
  responseBody: { id },
  resource: { type: 'escrow', id, status: 'awaiting_funding', location },
});

const CONCURRENT_MESSAGE = 'A request with this Idempotency-Key is still being processed; retry later with the same key.';
const REUSED_MESSAGE = 'This Idempotency-Key was already used with a different request. Use a new key for a new request.';
const PROCESSED_MESSAGE = 'This Idempotency-Key was already processed; details name the resource it produced (fetch it instead of retrying).';

/** An in_progress claim row whose lease ends at `lockedUntil` (times from this process's clock). */
async function heldClaim(userId: string, key: string, request: unknown, lockedUntil: Date): Promise<void> {
  await knex('idempotency_keys').insert({
    user_id: userId,
    operation: 'createEscrow',
    key,
    request_hash: requestHash(request),
    status: 'in_progress',
    claim_token: crypto.randomUUID(),
    locked_until: lockedUntil,
    expires_at: knex.raw(`now() + interval '1 day'`),
  });
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('canonical JSON of a request', () => {
  it('writes bigints as strings, undefined as null, arrays in order and object keys sorted', () => {
    expect(canonicalJson(12n)).toBe('"12"');
    expect(canonicalJson({ amount: 5n })).toBe('{"amount":"5"}');
    expect(canonicalJson(undefined)).toBe('null');
    expect(canonicalJson(null)).toBe('null');
    expect(canonicalJson('x')).toBe('"x"');
    expect(canonicalJson([3, 1, 2])).toBe('[3,1,2]');
    expect(canonicalJson([])).toBe('[]');
    expect(canonicalJson({})).toBe('{}');
    expect(canonicalJson({ b: 2, a: 1, c: 3 })).toBe('{"a":1,"b":2,"c":3}');
    expect(canonicalJson({ a: null })).toBe('{"a":null}');
    expect(canonicalJson([{ z: 1, y: [undefined] }])).toBe('[{"y":[null],"z":1}]');
  });

  it('hashes it with SHA-256 (digests computed with sha256sum)', () => {
    // printf '%s' '{}' | sha256sum ; printf '%s' '{"a":1,"b":"x"}' | sha256sum
    expect(requestHash({})).toBe('44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a');
    expect(requestHash({ b: 'x', a: 1 })).toBe('ecf9e98ec0641e23113ff3ce8bdc78d0ddd249886517fd4a7f68cc83d4e65667');
  });
});

describe('Idempotency-Key header', () => {
  const field = 'header.idempotency-key';
  const refusal = (key: unknown) => {
    try {
      validateIdempotencyKey(key);
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      return { message: (error as ValidationError).message, details: (error as ValidationError).details };
    }
    throw new Error(`expected ${JSON.stringify(key)} to be refused`);
  };

  it('is required', () => {
    const required = 'The Idempotency-Key header is required for this operation.';
    for (const key of [undefined, '', 42]) {
      expect(refusal(key), String(key)).toEqual({ message: required, details: [{ field, message: required }] });
    }
  });

  it('is 1 to 255 printable ASCII characters without spaces, anchored at both ends', () => {
    const format = 'The Idempotency-Key must be 1 to 255 printable ASCII characters without spaces.';
    for (const key of ['a'.repeat(256), 'has space', ' lead', 'trail ', 'tab\tkey', 'del\x7f', 'é', 'line\nbreak']) {
      expect(refusal(key), JSON.stringify(key)).toEqual({ message: format, details: [{ field, message: format }] });
    }
    for (const key of ['!', '~', 'a'.repeat(255), '!~azAZ09-_.:']) expect(validateIdempotencyKey(key)).toBe(key);
  });
});

describe('IdempotencyService terms', () => {
  it('keeps keys ttlHours (at least 24) and leases claims 60 s unless told otherwise', () => {
    expect(new IdempotencyService(knex, { ttlHours: 24 }).terms).toEqual({ ttlHours: 24, leaseSeconds: 60 });
    expect(new IdempotencyService(knex, { ttlHours: 48, leaseSeconds: 5 }).terms).toEqual({ ttlHours: 48, leaseSeconds: 5 });
    expect(() => new IdempotencyService(knex, { ttlHours: 23 })).toThrow(new RangeError('idempotency keys are kept at least 24 hours'));
  });

  it('stores a claim with a lease of leaseSeconds and a key that expires after ttlHours', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const longLived = new IdempotencyService(knex, { ttlHours: 48, leaseSeconds: 30 });
    const id = crypto.randomUUID();
    await longLived.execute({ userId: user.id, operation: 'createEscrow', key, request: {} }, async (trx) => {
      const row = await trx('idempotency_keys').where({ user_id: user.id, key }).first();
      expect(row.status).toBe('in_progress');
      expect(row.locked_until.getTime() - row.created_at.getTime()).toBe(30_000);
      expect(row.expires_at.getTime() - row.created_at.getTime()).toBe(48 * 3_600_000);
      return produce(id, `/api/escrows/${id}`)();
    });
  });
});

describe('replays and reuses, exactly', () => {
  it('a replay: 409 IdempotencyKeyAlreadyProcessed with the resource, its current status when a reader is registered, and its Location', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const id = crypto.randomUUID();
    const withReader = new IdempotencyService(knex, { ttlHours: 24 });
    withReader.registerResourceStatus('escrow', async (_db, resourceId) => (resourceId === id ? 'funded' : undefined));
    const request = { userId: user.id, operation: 'createEscrow', key, request: { body: { amount: 5 } } };
    expect(await withReader.execute(request, produce(id, `/api/escrows/${id}`))).toBe(id);
    const replay = await failure(withReader.execute(request, neverRuns));
    expect(replay).toBeInstanceOf(ConflictError);
    expect({ code: replay.code, message: replay.message, details: replay.details, headers: replay.headers }).toEqual({
      code: 'IdempotencyKeyAlreadyProcessed',
      message: PROCESSED_MESSAGE,
      details: { resource_type: 'escrow', resource_id: id, status: 'funded' },
      headers: { Location: `/api/escrows/${id}` },
    });
    // Without a reader the stored status stands.
    expect((await failure(service().execute(request, neverRuns))).details).toEqual({ resource_type: 'escrow', resource_id: id, status: 'awaiting_funding' });
    // A reader that knows nothing of the resource: the stored status too.
    const blind = new IdempotencyService(knex, { ttlHours: 24 });
    blind.registerResourceStatus('escrow', async () => undefined);
    expect((await failure(blind.execute(request, neverRuns))).details).toEqual({ resource_type: 'escrow', resource_id: id, status: 'awaiting_funding' });
    // A reader of another resource type is not asked.
    const other = new IdempotencyService(knex, { ttlHours: 24 });
    other.registerResourceStatus('transfer', async () => 'completed');
    expect((await failure(other.execute(request, neverRuns))).details).toEqual({ resource_type: 'escrow', resource_id: id, status: 'awaiting_funding' });
  });

  it('a replay once the lease of the completed key lapsed still answers 409: a processed key never runs again', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const id = crypto.randomUUID();
    const request = { userId: user.id, operation: 'createEscrow', key, request: {} };
    await service().execute(request, produce(id, `/api/escrows/${id}`));
    await knex('idempotency_keys').where({ user_id: user.id, key }).update({ locked_until: knex.raw(`now() - interval '1 hour'`) });
    const replay = await failure(service().execute(request, neverRuns));
    expect(replay.code).toBe('IdempotencyKeyAlreadyProcessed');
  });

  it('another request under a completed key: 422 IdempotencyKeyReused naming the operation, the resource and its Location', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const id = crypto.randomUUID();
    const withReader = new IdempotencyService(knex, { ttlHours: 24 });
    withReader.registerResourceStatus('escrow', async () => 'delivered');
    await withReader.execute({ userId: user.id, operation: 'createEscrow', key, request: { n: 1 } }, produce(id, `/api/escrows/${id}`));
    const reused = await failure(withReader.execute({ userId: user.id, operation: 'createEscrow', key, request: { n: 2 } }, neverRuns));
    expect(reused).toBeInstanceOf(UnprocessableError);
    expect({ code: reused.code, message: reused.message, details: reused.details, headers: reused.headers }).toEqual({
      code: 'IdempotencyKeyReused',
      message: REUSED_MESSAGE,
      details: { operation: 'createEscrow', resource_type: 'escrow', resource_id: id, status: 'delivered' },
      headers: { Location: `/api/escrows/${id}` },
    });
  });

  it('another request under a key still in flight: 422 naming only the operation, no Location', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    await heldClaim(user.id, key, { n: 1 }, new Date(Date.now() + 60_000));
    const reused = await failure(service().execute({ userId: user.id, operation: 'createEscrow', key, request: { n: 2 } }, neverRuns));
    expect({ code: reused.code, message: reused.message, details: reused.details, headers: reused.headers }).toEqual({
      code: 'IdempotencyKeyReused',
      message: REUSED_MESSAGE,
      details: { operation: 'createEscrow' },
      headers: undefined,
    });
  });

  it('names a produced resource without a Location, and gives no Location header', () => {
    const produced = { resourceType: 'payment', resourceId: 'p-1', status: 'succeeded', resourceLocation: null };
    const processed = keyAlreadyProcessed(produced);
    expect([processed.code, processed.category, processed.details, processed.headers]).toEqual([
      'IdempotencyKeyAlreadyProcessed',
      'conflict',
      { resource_type: 'payment', resource_id: 'p-1', status: 'succeeded' },
      undefined,
    ]);
    const reused = keyReused('payPaymentLink', produced);
    expect([reused.code, reused.category, reused.details, reused.headers]).toEqual([
      'IdempotencyKeyReused',
      'unprocessable',
      { operation: 'payPaymentLink', resource_type: 'payment', resource_id: 'p-1', status: 'succeeded' },
      undefined,
    ]);
    expect(keyReused('payPaymentLink').details).toEqual({ operation: 'payPaymentLink' });
  });
});

describe('a key held by a running (or dead) request: 409 ConcurrentOperation and its Retry-After', () => {
  /** The refusal of the same request while the claim's lease ends `leaseLeftMs` after the frozen clock. */
  async function heldFor(leaseLeftMs: number): Promise<Failure> {
    const user = await createUser();
    const key = crypto.randomUUID();
    const now = Date.now();
    await heldClaim(user.id, key, { n: 1 }, new Date(now + leaseLeftMs));
    vi.spyOn(Date, 'now').mockReturnValue(now);
    try {
      return await failure(service().execute({ userId: user.id, operation: 'createEscrow', key, request: { n: 1 } }, neverRuns));
    } finally {
      vi.restoreAllMocks();
    }
  }

  it('says 1 s while the claim is younger than 5 s (lease 60 s)', async () => {
    const young = await heldFor(55_001); // claimed 4.999 s ago
    expect({ code: young.code, category: young.category, message: young.message, details: young.details, headers: young.headers }).toEqual({
      code: 'ConcurrentOperation',
      category: 'conflict',
      message: CONCURRENT_MESSAGE,
      details: undefined,
      headers: { 'Retry-After': '1' },
    });
  });

  it('from 5 s of age on, says when the lease lapses, in whole seconds rounded up', async () => {
    expect((await heldFor(55_000)).headers).toEqual({ 'Retry-After': '55' }); // claimed exactly 5 s ago
    expect((await heldFor(40_500)).headers).toEqual({ 'Retry-After': '41' });
    expect((await heldFor(40_000)).headers).toEqual({ 'Retry-After': '40' });
    expect((await heldFor(1)).headers).toEqual({ 'Retry-After': '1' });
  });

  it('takes over a claim whose lease ends exactly now', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const now = Date.now();
    await heldClaim(user.id, key, { n: 1 }, new Date(now));
    const id = crypto.randomUUID();
    vi.spyOn(Date, 'now').mockReturnValue(now);
    try {
      expect(await service().execute({ userId: user.id, operation: 'createEscrow', key, request: { n: 1 } }, produce(id, `/api/escrows/${id}`))).toBe(id);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('takes over a completed key that expires exactly now, even for another request', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const first = crypto.randomUUID();
    await service().execute({ userId: user.id, operation: 'createEscrow', key, request: { n: 1 } }, produce(first, `/api/escrows/${first}`));
    const now = Date.now();
    await knex('idempotency_keys').where({ user_id: user.id, key }).update({ expires_at: new Date(now) });
    const second = crypto.randomUUID();
    vi.spyOn(Date, 'now').mockReturnValue(now);
    try {
      expect(await service().execute({ userId: user.id, operation: 'createEscrow', key, request: { n: 2 } }, produce(second, `/api/escrows/${second}`))).toBe(second);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('a completion fenced out by a takeover answers ConcurrentOperation with Retry-After 1', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const error = await failure(
      service().execute({ userId: user.id, operation: 'createEscrow', key, request: {} }, async (trx) => {
        await trx('idempotency_keys').where({ user_id: user.id, key }).update({ claim_token: crypto.randomUUID() });
        const id = crypto.randomUUID();
        return produce(id, `/api/escrows/${id}`)();
      }),
    );
    expect({ code: error.code, message: error.message, headers: error.headers }).toEqual({ code: 'ConcurrentOperation', message: CONCURRENT_MESSAGE, headers: { 'Retry-After': '1' } });
  });
});

describe('a refused effect leaves the key free', () => {
  it('rolls the claim back with the effect: nothing to release, the refusal rethrown as it was', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const release = vi.spyOn(idempotencyRepository, 'release');
    const refusal = new UnprocessableError('InsufficientFunds', 'no money');
    const request = { userId: user.id, operation: 'createEscrow', key, request: {} };
    const error = await failure(
      service().execute(request, async () => {
        throw refusal;
      }),
    );
    expect(error).toBe(refusal);
    expect(release).not.toHaveBeenCalled();
    expect(await knex('idempotency_keys').where({ user_id: user.id, key }).first()).toBeUndefined();
    // The key was not consumed: the same request runs now.
    const id = crypto.randomUUID();
    expect(await service().execute(request, produce(id, `/api/escrows/${id}`))).toBe(id);
  });
});

describe('one transaction per keyed request', () => {
  it('claims the key as the first statement of the effect\'s transaction and completes it before COMMIT, nothing outside', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const id = crypto.randomUUID();
    const statements: string[] = [];
    const listener = (query: { sql: string }) => statements.push(query.sql);
    knex.on('query', listener);
    try {
      await service().execute({ userId: user.id, operation: 'createEscrow', key, request: { a: 1 } }, async (trx) => {
        await trx.raw('SELECT 1 AS effect');
        return produce(id, `/api/escrows/${id}`)();
      });
    } finally {
      knex.off('query', listener);
    }
    expect(statements).toHaveLength(5);
    expect(statements[0]).toMatch(/^BEGIN/);
    expect(statements[1]).toMatch(/pg_try_advisory_xact_lock[\s\S]*INSERT INTO idempotency_keys/);
    expect(statements[2]).toBe('SELECT 1 AS effect');
    expect(statements[3]).toMatch(/^update "idempotency_keys" set "status" = /);
    expect(statements[4]).toMatch(/^COMMIT/);
    expect(await knex('idempotency_keys').where({ user_id: user.id, key }).first()).toMatchObject({ status: 'completed', resource_id: id });
  });
});

describe('what no ordinary run shows (the repository stubbed)', () => {
  it('gives up after three attempts to claim a key that keeps slipping away: 409 ConcurrentOperation', async () => {
    const user = await createUser();
    const claim = vi.spyOn(idempotencyRepository, 'claimInTransaction').mockResolvedValue({ held: true });
    const find = vi.spyOn(idempotencyRepository, 'find').mockResolvedValue(undefined);
    const error = await failure(service().execute({ userId: user.id, operation: 'createEscrow', key: crypto.randomUUID(), request: {} }, neverRuns));
    expect({ code: error.code, message: error.message, headers: error.headers }).toEqual({ code: 'ConcurrentOperation', message: CONCURRENT_MESSAGE, headers: { 'Retry-After': '1' } });
    expect(claim).toHaveBeenCalledTimes(3);
    expect(find).toHaveBeenCalledTimes(3);
  });

  it('a key whose advisory lock another transaction holds, with no completed row: 409 ConcurrentOperation with Retry-After 1, after one read', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const claim = vi.spyOn(idempotencyRepository, 'claimInTransaction').mockResolvedValue({ held: false });
    const find = vi.spyOn(idempotencyRepository, 'find');
    const error = await failure(service().execute({ userId: user.id, operation: 'createEscrow', key, request: {} }, neverRuns));
    expect({ code: error.code, message: error.message, headers: error.headers }).toEqual({ code: 'ConcurrentOperation', message: CONCURRENT_MESSAGE, headers: { 'Retry-After': '1' } });
    expect(claim).toHaveBeenCalledTimes(1);
    expect(find).toHaveBeenCalledTimes(1);
    // An in_progress row under a held lock is in use too, whatever its lease says (never taken over while held).
    await heldClaim(user.id, key, {}, new Date(Date.now() - 1_000));
    const inUse = await failure(service().execute({ userId: user.id, operation: 'createEscrow', key, request: {} }, neverRuns));
    expect({ code: inUse.code, headers: inUse.headers }).toEqual({ code: 'ConcurrentOperation', headers: { 'Retry-After': '1' } });
    expect(await knex('idempotency_keys').where({ user_id: user.id, key }).first()).toMatchObject({ status: 'in_progress' });
  });
});

describe('IdempotencyService.describe, exactly', () => {
  it('a completed key stored without a resource status or location: status unknown, location empty', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const resourceId = crypto.randomUUID();
    await knex('idempotency_keys').insert({
      user_id: user.id,
      operation: 'createEscrow',
      key,
      request_hash: requestHash({}),
      status: 'completed',
      claim_token: crypto.randomUUID(),
      locked_until: knex.raw('now()'),
      expires_at: knex.raw(`now() + interval '1 day'`),
      response_status: 201,
      resource_type: 'escrow',
      resource_id: resourceId,
      completed_at: knex.raw('now()'),
    });
    expect((await service().describe(user.id, key)).resource).toEqual({ type: 'escrow', id: resourceId, status: 'unknown', location: '' });
  });

  it('a completed key: its resource, response status and times', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const id = crypto.randomUUID();
    await service().execute({ userId: user.id, operation: 'createEscrow', key, request: { a: 1 } }, produce(id, `/api/escrows/${id}`));
    const row = await knex('idempotency_keys').where({ user_id: user.id, key }).first();
    expect(await service().describe(user.id, key)).toEqual({
      key,
      operation: 'createEscrow',
      status: 'completed',
      request_hash: requestHash({ a: 1 }),
      response_status: 201,
      resource: { type: 'escrow', id, status: 'awaiting_funding', location: `/api/escrows/${id}` },
      created_at: row.created_at.toISOString(),
      completed_at: row.completed_at.toISOString(),
      expires_at: row.expires_at.toISOString(),
    });
    expect(row.completed_at).toBeInstanceOf(Date);
  });

  it('filters by operation when asked', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    await heldClaim(user.id, key, {}, new Date(Date.now() + 60_000));
    expect((await service().describe(user.id, key, 'createEscrow')).operation).toBe('createEscrow');
    const error = await failure(service().describe(user.id, key, 'createTransfer'));
    expect({ code: error.code, category: error.category, message: error.message }).toEqual({
      code: 'IdempotencyKeyNotFound',
      category: 'not_found',
      message: 'No live idempotency key of yours has this value.',
    });
  });

  it('an in-progress key: no resource, no completion time', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    await heldClaim(user.id, key, {}, new Date(Date.now() + 60_000));
    expect(await service().describe(user.id, key)).toMatchObject({ status: 'in_progress', resource: null, response_status: null, completed_at: null });
  });

  it('a malformed key is not found without asking the database', async () => {
    const user = await createUser();
    const queries: string[] = [];
    const listener = (query: { sql: string }) => queries.push(query.sql);
    knex.on('query', listener);
    try {
      for (const key of ['has space', 'a'.repeat(256), '']) {
        expect((await failure(service().describe(user.id, key))).code).toBe('IdempotencyKeyNotFound');
      }
    } finally {
      knex.off('query', listener);
    }
    expect(queries).toEqual([]);
  });
});
