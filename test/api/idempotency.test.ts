import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { createCaller, type TestCaller } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';

/**
 * The idempotency key of POST /transfers over time: a key still held by a request in flight,
 * a request that died holding it (its lease lapsed), and a processed key replayed long after.
 * Time is moved on the key's row (its lease and expiry), the one state the API keeps for it.
 */
let app: App;
const knex = testKnex();

beforeAll(async () => {
  app = await buildTestApp();
});

function transfer(from: TestCaller, body: object, key: string) {
  return request(app).post('/api/transfers').set(from.auth).set('Idempotency-Key', key).send(body);
}

async function eurBalance(who: TestCaller): Promise<string | undefined> {
  const res = await request(app).get('/api/wallets').set(who.auth).expect(200);
  return (res.body.data.data as Array<{ currency: string; balance: string }>).find((w) => w.currency === 'EUR')?.balance;
}

const keyRow = (who: TestCaller, key: string) => knex('idempotency_keys').where({ user_id: who.user.id, operation: 'createTransfer', key });

/**
 * Leaves `key` as a request still in flight would: claimed for the same request as `sameAs`
 * (a key the same body was already sent with), its lease running for another minute.
 */
async function holdInFlight(who: TestCaller, key: string, sameAs: string): Promise<void> {
  const { request_hash } = await keyRow(who, sameAs).first('request_hash');
  await knex('idempotency_keys').insert({
    user_id: who.user.id,
    operation: 'createTransfer',
    key,
    request_hash,
    status: 'in_progress',
    claim_token: crypto.randomUUID(),
    locked_until: knex.raw(`now() + interval '1 minute'`),
    expires_at: knex.raw(`now() + interval '1 day'`),
  });
}

describe('POST /transfers with a key still in flight', () => {
  it('answers 409 ConcurrentOperation with Retry-After: 1 to the same request, and moves nothing', async () => {
    const alice = await createCaller(app, { EUR: 10_000n });
    const bob = await createCaller(app);
    const body = { amount: 10, currency: 'EUR', recipientIdentifier: bob.user.email };
    await transfer(alice, body, 'first').expect(200);
    await holdInFlight(alice, 'held', 'first');
    const res = await transfer(alice, body, 'held');
    expect(res.status).toBe(409);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.headers.location).toBeUndefined();
    expect(res.body).toEqual({
      success: false,
      error: 'ConcurrentOperation',
      message: 'A request with this Idempotency-Key is still being processed; retry later with the same key.',
    });
    expect(await eurBalance(alice)).toBe('90.00');
    expect(await eurBalance(bob)).toBe('10.00');
  });

  it('answers a different request 422 IdempotencyKeyReused naming only the operation: nothing was produced yet', async () => {
    const alice = await createCaller(app, { EUR: 10_000n });
    const bob = await createCaller(app);
    const body = { amount: 10, currency: 'EUR', recipientIdentifier: bob.user.email };
    await transfer(alice, body, 'first').expect(200);
    await holdInFlight(alice, 'held', 'first');
    const res = await transfer(alice, { ...body, amount: 11 }, 'held');
    expect(res.status).toBe(422);
    expect(res.headers.location).toBeUndefined();
    expect(res.headers['retry-after']).toBeUndefined();
    expect(res.body).toEqual({
      success: false,
      error: 'IdempotencyKeyReused',
      message: 'This Idempotency-Key was already used with a different request. Use a new key for a new request.',
      details: { operation: 'createTransfer' },
    });
    expect(await eurBalance(alice)).toBe('90.00');
  });

  it('takes the key over once the lease of the request holding it lapsed: the transfer runs once', async () => {
    const alice = await createCaller(app, { EUR: 10_000n });
    const bob = await createCaller(app);
    const body = { amount: 10, currency: 'EUR', recipientIdentifier: bob.user.email };
    await transfer(alice, body, 'first').expect(200);
    await holdInFlight(alice, 'held', 'first');
    await keyRow(alice, 'held').update({ locked_until: knex.raw(`now() - interval '1 second'`) });
    const res = await transfer(alice, body, 'held');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'completed', amount: 10, amount_minor: '1000', currency: 'EUR' });
    expect(await keyRow(alice, 'held').first('status', 'resource_id')).toEqual({ status: 'completed', resource_id: res.body.data.id });
    const replay = await transfer(alice, body, 'held');
    expect(replay.status).toBe(409);
    expect(replay.body).toMatchObject({ error: 'IdempotencyKeyAlreadyProcessed', details: { resource_id: res.body.data.id } });
    expect(await eurBalance(alice)).toBe('80.00');
    expect(await eurBalance(bob)).toBe('20.00');
  });
});

describe('POST /transfers replayed after the lease of its key lapsed', () => {
  it('still answers 409 IdempotencyKeyAlreadyProcessed with the transfer and its Location: a processed key never runs again', async () => {
    const alice = await createCaller(app, { EUR: 10_000n });
    const bob = await createCaller(app);
    const body = { amount: 25, currency: 'EUR', recipientIdentifier: bob.user.email };
    const key = crypto.randomUUID();
    const first = await transfer(alice, body, key).expect(200);
    // A minute and more later: the lease taken by the first request has long lapsed.
    await keyRow(alice, key).update({ locked_until: knex.raw(`now() - interval '2 minutes'`), created_at: knex.raw(`now() - interval '2 minutes'`) });
    for (const replayBody of [body, { ...body, amount: 26 }]) {
      const replay = await transfer(alice, replayBody, key);
      const expected =
        replayBody === body
          ? { status: 409, error: 'IdempotencyKeyAlreadyProcessed', details: { resource_type: 'transfer', resource_id: first.body.data.id, status: 'completed' } }
          : {
              status: 422,
              error: 'IdempotencyKeyReused',
              details: { operation: 'createTransfer', resource_type: 'transfer', resource_id: first.body.data.id, status: 'completed' },
            };
      expect(replay.status).toBe(expected.status);
      expect(replay.body).toMatchObject({ success: false, error: expected.error, details: expected.details });
      expect(replay.headers.location).toBe(`/api/transfers/${first.body.data.id}`);
      expect(replay.headers['retry-after']).toBeUndefined();
    }
    expect(await eurBalance(alice)).toBe('75.00');
    expect(await eurBalance(bob)).toBe('25.00');
    expect(await knex('transfers').where({ sender_user_id: alice.user.id })).toHaveLength(1);
    await expectLedgerInvariants(knex);
  });

  it('runs again once the key expired: a new transfer under the same key', async () => {
    const alice = await createCaller(app, { EUR: 10_000n });
    const bob = await createCaller(app);
    const body = { amount: 5, currency: 'EUR', recipientIdentifier: bob.user.email };
    const key = crypto.randomUUID();
    const first = await transfer(alice, body, key).expect(200);
    await keyRow(alice, key).update({
      locked_until: knex.raw(`now() - interval '2 days'`),
      created_at: knex.raw(`now() - interval '2 days'`),
      expires_at: knex.raw(`now() - interval '1 second'`),
    });
    const again = await transfer(alice, body, key);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.data.id).not.toBe(first.body.data.id);
    expect(await eurBalance(alice)).toBe('90.00');
    expect(await eurBalance(bob)).toBe('10.00');
  });
});
