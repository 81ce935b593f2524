import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConflictError, UnprocessableError, ValidationError } from '../../src/errors';
import { fundWallet } from '../../src/modules/ledger';
import { IdempotencyService, canonicalJson, requestHash, validateIdempotencyKey } from '../../src/modules/idempotency';
import { databaseKind, testKnex } from '../support/database';
import { createUser, walletBalance } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { failure } from '../support/failures';

const knex = testKnex();
const service = new IdempotencyService(knex, { ttlHours: 24 });

/** A real effect: credits the user's EUR wallet by `amount` minor units and reports it as a resource. */
function credit(userId: string, amount: bigint) {
  return async (trx: Parameters<Parameters<typeof service.execute>[1]>[0]) => {
    const posting = await fundWallet(trx, userId, 'EUR', amount);
    return {
      result: posting.id,
      responseStatus: 200,
      responseBody: { id: posting.id },
      resource: { type: 'transfer', id: posting.id, status: 'completed', location: `/api/transfers/${posting.id}` },
    };
  };
}

describe('request hash', () => {
  it('ignores key order and undefined members but not values', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: 'x' }, u: undefined })).toBe('{"a":{"c":"x","d":[1,{"x":1,"y":2}]},"b":1}');
    expect(requestHash({ amount: 10, currency: 'EUR' })).toBe(requestHash({ currency: 'EUR', amount: 10 }));
    expect(requestHash({ amount: 10, currency: 'EUR' })).not.toBe(requestHash({ amount: 11, currency: 'EUR' }));
    expect(requestHash({ amount: 10 })).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('IdempotencyService.execute', () => {
  it('runs the effect once; a replay answers IdempotencyKeyAlreadyProcessed with the resource and its Location', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const request = { userId: user.id, operation: 'createTransfer', key, request: { body: { amount: 5 } } };
    const postingId = await service.execute(request, credit(user.id, 500n));
    const replay = await failure(service.execute(request, credit(user.id, 500n)));
    expect(replay).toBeInstanceOf(ConflictError);
    expect(replay).toMatchObject({
      code: 'IdempotencyKeyAlreadyProcessed',
      details: { resource_type: 'transfer', resource_id: postingId, status: 'completed' },
      headers: { Location: `/api/transfers/${postingId}` },
    });
    expect(await walletBalance(user.id, 'EUR')).toBe(500n);
    const row = await knex('idempotency_keys').where({ user_id: user.id, key }).first();
    expect(row).toMatchObject({ status: 'completed', response_status: 200, response_body: { id: postingId }, request_hash: requestHash({ body: { amount: 5 } }) });
  });

  it('refuses the same key with a different request: IdempotencyKeyReused (422), no effect', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    await service.execute({ userId: user.id, operation: 'createTransfer', key, request: { body: { amount: 5 } } }, credit(user.id, 500n));
    const error = await failure(service.execute({ userId: user.id, operation: 'createTransfer', key, request: { body: { amount: 6 } } }, credit(user.id, 600n)));
    expect(error).toBeInstanceOf(UnprocessableError);
    expect(error.code).toBe('IdempotencyKeyReused');
    expect(await walletBalance(user.id, 'EUR')).toBe(500n);
  });

  it('does not consume the key when the effect is refused: the retry runs', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const request = { userId: user.id, operation: 'createTransfer', key, request: { body: { amount: 5 } } };
    const refused = await failure(
      service.execute(request, async (trx) => {
        await fundWallet(trx, user.id, 'EUR', 999n); // rolled back with the refusal
        throw new UnprocessableError('InsufficientFunds', 'not enough');
      }),
    );
    expect(refused.code).toBe('InsufficientFunds');
    expect(await knex('idempotency_keys').where({ user_id: user.id, key }).first()).toBeUndefined();
    expect(await walletBalance(user.id, 'EUR')).toBe(0n);
    await service.execute(request, credit(user.id, 500n));
    expect(await walletBalance(user.id, 'EUR')).toBe(500n);
  });

  it('scopes keys to the user and the operation', async () => {
    const [alice, bob] = [await createUser(), await createUser()];
    const key = crypto.randomUUID();
    await service.execute({ userId: alice.id, operation: 'createTransfer', key, request: {} }, credit(alice.id, 1n));
    await service.execute({ userId: bob.id, operation: 'createTransfer', key, request: {} }, credit(bob.id, 2n));
    await service.execute({ userId: alice.id, operation: 'createEscrow', key, request: {} }, credit(alice.id, 4n));
    expect(await walletBalance(alice.id, 'EUR')).toBe(5n);
    expect(await walletBalance(bob.id, 'EUR')).toBe(2n);
  });

  it('lets exactly one of 20 concurrent requests with one key execute', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const request = { userId: user.id, operation: 'createTransfer', key, request: { body: { amount: 1 } } };
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, () =>
        service.execute(request, async (trx) => {
          const outcome = await credit(user.id, 100n)(trx);
          await new Promise((resolve) => setTimeout(resolve, 20)); // widen the window
          return outcome;
        }),
      ),
    );
    const fulfilled = results.filter((r) => r.status === 'fulfilled');
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(fulfilled).toHaveLength(1);
    expect(rejected).toHaveLength(19);
    for (const r of rejected) {
      expect(r.reason).toBeInstanceOf(ConflictError);
      expect(['ConcurrentOperation', 'IdempotencyKeyAlreadyProcessed']).toContain((r.reason as ConflictError).code);
    }
    expect(await walletBalance(user.id, 'EUR')).toBe(100n);
    await expectLedgerInvariants(knex);
  });

  // Two transactions at once need the real server (the embedded one takes one connection at a time).
  it.runIf(databaseKind() === 'postgres')('tells a second request with the key at once while the first runs, and shows no claim before the first commits', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const request = { userId: user.id, operation: 'createTransfer', key, request: { body: { amount: 3 } } };
    let letFirstFinish: () => void = () => undefined;
    const firstHasClaimed = new Promise<void>((claimed) => {
      void service
        .execute(request, async (trx) => {
          claimed();
          await new Promise<void>((resolve) => (letFirstFinish = resolve));
          return credit(user.id, 3n)(trx);
        })
        .then(
          (id) => (firstResult = id),
          (error: unknown) => (firstResult = error),
        );
    });
    let firstResult: unknown;
    await firstHasClaimed;
    // Seen from another connection, the key does not exist yet: the claim commits with the effect.
    expect(await knex('idempotency_keys').where({ user_id: user.id, key }).first()).toBeUndefined();
    const second = await failure(service.execute(request, credit(user.id, 3n)));
    expect({ code: second.code, headers: second.headers }).toEqual({ code: 'ConcurrentOperation', headers: { 'Retry-After': '1' } });
    letFirstFinish();
    await expect.poll(() => firstResult).toBeTypeOf('string');
    const replay = await failure(service.execute(request, credit(user.id, 3n)));
    expect(replay.code).toBe('IdempotencyKeyAlreadyProcessed');
    expect(await walletBalance(user.id, 'EUR')).toBe(3n);
  });

  it.runIf(databaseKind() === 'postgres')('answers replays of a completed key from its row while another request holds the key\'s lock', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const request = { userId: user.id, operation: 'createTransfer', key, request: { body: { amount: 4 } } };
    const id = await service.execute(request, credit(user.id, 4n));
    // What a parallel replay being answered holds: the key's advisory lock, on another connection.
    await knex.transaction(async (holder) => {
      await holder.raw(`SELECT pg_advisory_xact_lock(hashtextextended(? || ' ' || ? || ' ' || ?, 0))`, [user.id, 'createTransfer', key]);
      const replay = await failure(service.execute(request, credit(user.id, 4n)));
      expect({ code: replay.code, details: replay.details }).toEqual({ code: 'IdempotencyKeyAlreadyProcessed', details: { resource_type: 'transfer', resource_id: id, status: 'completed' } });
      const reused = await failure(service.execute({ ...request, request: { body: { amount: 5 } } }, credit(user.id, 5n)));
      expect(reused.code).toBe('IdempotencyKeyReused');
      // A key that is not completed, held by someone else: in use.
      await holder.raw(`SELECT pg_advisory_xact_lock(hashtextextended(? || ' ' || ? || ' ' || ?, 0))`, [user.id, 'createTransfer', `${key}-next`]);
      const held = await failure(service.execute({ ...request, key: `${key}-next` }, credit(user.id, 6n)));
      expect({ code: held.code, headers: held.headers }).toEqual({ code: 'ConcurrentOperation', headers: { 'Retry-After': '1' } });
    });
    expect(await walletBalance(user.id, 'EUR')).toBe(4n);
  });

  it('answers ConcurrentOperation while a live claim exists, and takes over a claim whose lease lapsed', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const hash = requestHash({});
    await knex('idempotency_keys').insert({
      user_id: user.id,
      operation: 'createTransfer',
      key,
      request_hash: hash,
      status: 'in_progress',
      claim_token: crypto.randomUUID(),
      locked_until: knex.raw(`now() + interval '1 minute'`),
      expires_at: knex.raw(`now() + interval '1 day'`),
    });
    const request = { userId: user.id, operation: 'createTransfer', key, request: {} };
    expect((await failure(service.execute(request, credit(user.id, 7n)))).code).toBe('ConcurrentOperation');
    // The claimer died: once its lease lapses, the key is taken over.
    await knex('idempotency_keys').where({ user_id: user.id, key }).update({ locked_until: knex.raw(`now() - interval '1 second'`) });
    await service.execute(request, credit(user.id, 7n));
    expect(await walletBalance(user.id, 'EUR')).toBe(7n);
    expect(await knex('idempotency_keys').where({ user_id: user.id, key }).first('status')).toEqual({ status: 'completed' });
  });

  it('fences out a request whose claim was taken over: its effect rolls back', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const error = await failure(
      service.execute({ userId: user.id, operation: 'createTransfer', key, request: {} }, async (trx) => {
        const outcome = await credit(user.id, 9n)(trx);
        // What a takeover by another request (after this one's lease lapsed) does to the row.
        await trx('idempotency_keys').where({ user_id: user.id, key }).update({ claim_token: crypto.randomUUID() });
        return outcome;
      }),
    );
    expect(error.code).toBe('ConcurrentOperation');
    expect(await walletBalance(user.id, 'EUR')).toBe(0n);
  });

  it('reuses an expired key, even with another request', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    await service.execute({ userId: user.id, operation: 'createTransfer', key, request: { n: 1 } }, credit(user.id, 3n));
    await knex('idempotency_keys')
      .where({ user_id: user.id, key })
      .update({ created_at: knex.raw(`now() - interval '3 days'`), expires_at: knex.raw(`now() - interval '1 day'`) });
    await service.execute({ userId: user.id, operation: 'createTransfer', key, request: { n: 2 } }, credit(user.id, 4n));
    expect(await walletBalance(user.id, 'EUR')).toBe(7n);
    const row = await knex('idempotency_keys').where({ user_id: user.id, key }).first();
    expect(row.request_hash).toBe(requestHash({ n: 2 }));
    expect(row.expires_at.getTime()).toBeGreaterThan(Date.now() + 23 * 3600_000);
  });

  it('refuses missing, empty, too long or non-printable keys (the pipeline checks them before claiming)', async () => {
    const user = await createUser();
    for (const key of ['', 'a'.repeat(256), 'has space', 'tab\tkey', undefined]) {
      expect(() => validateIdempotencyKey(key), String(key)).toThrow(ValidationError);
    }
    expect(validateIdempotencyKey('k'.repeat(255))).toBe('k'.repeat(255));
    await service.execute({ userId: user.id, operation: 'createTransfer', key: 'k'.repeat(255), request: {} }, credit(user.id, 1n));
    expect(await walletBalance(user.id, 'EUR')).toBe(1n);
  });

  it('keeps keys at least 24 hours', () => {
    expect(() => new IdempotencyService(knex, { ttlHours: 23 })).toThrow(/24 hours/);
  });
});

describe('IdempotencyService.describe', () => {
  it('shows the state of one of the caller’s keys, and nobody else’s', async () => {
    const [user, other] = [await createUser(), await createUser()];
    const key = crypto.randomUUID();
    const postingId = await service.execute({ userId: user.id, operation: 'createTransfer', key, request: { a: 1 } }, credit(user.id, 1n));
    const view = await service.describe(user.id, key);
    expect(view).toMatchObject({
      key,
      operation: 'createTransfer',
      status: 'completed',
      request_hash: requestHash({ a: 1 }),
      response_status: 200,
      resource: { type: 'transfer', id: postingId, status: 'completed', location: `/api/transfers/${postingId}` },
    });
    expect(new Date(view.expires_at).getTime() - new Date(view.created_at).getTime()).toBe(24 * 3600_000);
    expect((await failure(service.describe(other.id, key))).code).toBe('IdempotencyKeyNotFound');
    expect((await failure(service.describe(user.id, crypto.randomUUID()))).code).toBe('IdempotencyKeyNotFound');
  });

  it('shows an in-progress key without a resource, and purges expired keys', async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    await knex('idempotency_keys').insert({
      user_id: user.id,
      operation: 'createEscrow',
      key,
      request_hash: requestHash({}),
      status: 'in_progress',
      claim_token: crypto.randomUUID(),
      locked_until: knex.raw(`now() + interval '1 minute'`),
      expires_at: knex.raw(`now() + interval '1 day'`),
    });
    expect(await service.describe(user.id, key)).toMatchObject({ status: 'in_progress', operation: 'createEscrow', resource: null, response_status: null });
    await knex('idempotency_keys')
      .where({ user_id: user.id, key })
      .update({ created_at: knex.raw(`now() - interval '3 days'`), expires_at: knex.raw(`now() - interval '1 day'`) });
    expect((await failure(service.describe(user.id, key))).code).toBe('IdempotencyKeyNotFound');
    expect(await service.purgeExpired()).toBeGreaterThanOrEqual(1);
    expect(await knex('idempotency_keys').where({ user_id: user.id, key }).first()).toBeUndefined();
  });
});
