import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { fundWallet } from '../../src/modules/ledger';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { uniquePhone, createCaller, type TestCaller } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';

let app: App;
const knex = testKnex();

beforeAll(async () => {
  app = await buildTestApp();
});

function transfer(from: TestCaller, body: object, key: string | null = crypto.randomUUID()) {
  const call = request(app).post('/api/transfers').set(from.auth);
  return (key === null ? call : call.set('Idempotency-Key', key)).send(body);
}

async function balances(who: TestCaller): Promise<Record<string, string>> {
  const res = await request(app).get('/api/wallets').set(who.auth).expect(200);
  return Object.fromEntries((res.body.data.data as Array<{ currency: string; balance: string }>).map((w) => [w.currency, w.balance]));
}

async function settleRails(): Promise<void> {
  await app.services.transfers.whenDispatched();
  await app.services.payoutRail.settleAll();
}

describe('POST /transfers (p2p)', () => {
  it('moves money at once and answers the transfer, with its Location', async () => {
    const alice = await createCaller(app, { XOF: 1_000_000n, EUR: 100_000n });
    const bob = await createCaller(app);
    const res = await transfer(alice, { amount: 2500, currency: 'XOF', recipientIdentifier: bob.user.email, note: 'Lunch' });
    expect(res.status).toBe(200);
    expect(res.headers.location).toBe(`/api/transfers/${res.body.data.id}`);
    expect(res.body).toEqual({
      success: true,
      data: {
        id: expect.any(String),
        status: 'completed',
        rail: 'p2p',
        amount: 2500,
        amount_minor: '2500',
        currency: 'XOF',
        recipient: { identifier: bob.user.email, type: 'user', user_id: bob.user.id },
        note: 'Lunch',
        failure_code: null,
        failure_reason: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
    });
    expect(await balances(alice)).toEqual({ EUR: '1000.00', XOF: '997500' });
    expect(await balances(bob)).toEqual({ XOF: '2500' });
    const own = await request(app).get(`/api/transfers/${res.body.data.id}`).set(alice.auth).expect(200);
    expect(own.body.data).toEqual(res.body.data);
    const foreign = await request(app).get(`/api/transfers/${res.body.data.id}`).set(bob.auth).expect(404);
    expect(foreign.body).toMatchObject({ success: false, error: 'NotFound' });
  });

  it('lists wallets with exact balances; a new user has none', async () => {
    const carol = await createCaller(app, { KWD: 1_234n, JPY: 5n });
    const res = await request(app).get('/api/wallets').set(carol.auth).expect(200);
    expect(res.body.data).toMatchObject({ object: 'list', has_more: false, next_cursor: null });
    expect(res.body.data.data.map((w: { currency: string; balance: string; balance_minor: string; currency_exponent: number }) => [w.currency, w.balance, w.balance_minor, w.currency_exponent])).toEqual([
      ['JPY', '5', '5', 0],
      ['KWD', '1.234', '1234', 3],
    ]);
    const nobody = await createCaller(app);
    expect((await request(app).get('/api/wallets').set(nobody.auth).expect(200)).body.data.data).toEqual([]);
    await request(app).get('/api/wallets').expect(401);
  });
});

describe('POST /transfers refusals', () => {
  it('400 for a missing, empty or too long Idempotency-Key, and for bad amounts or currencies', async () => {
    const alice = await createCaller(app, { XOF: 1_000n, EUR: 1_000n });
    const bob = await createCaller(app);
    const body = { amount: 1, currency: 'XOF', recipientIdentifier: bob.user.email };
    for (const key of [null, '', 'k'.repeat(256)]) {
      const res = await transfer(alice, body, key);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ success: false, error: 'ValidationError' });
    }
    const cases: Array<[object, string]> = [
      [{ ...body, amount: 1.5 }, 'body.amount'],
      [{ ...body, currency: 'EUR', amount: 0.001 }, 'body.amount'],
      [{ ...body, currency: 'EUR', amount: 0.1 + 0.2 }, 'body.amount'],
      [{ ...body, currency: 'ZZZ' }, 'body.currency'],
      [{ ...body, currency: 'eur' }, 'body.currency'],
      [{ ...body, amount: 0 }, 'body.amount'],
      [{ ...body, recipientIdentifier: 'FR7630006000011234567890180' }, 'body.recipientIdentifier'],
      [{ ...body, rail: 'crypto' }, 'body.rail'],
      [{ ...body, extra: true }, 'body.extra'],
      [{ amount: 1, currency: 'XOF' }, 'body.recipientIdentifier'],
    ];
    for (const [bad, field] of cases) {
      const res = await transfer(alice, bad);
      expect({ bad, status: res.status, error: res.body.error }).toEqual({ bad, status: 400, error: 'ValidationError' });
      expect(JSON.stringify(res.body.details)).toContain(field.replace('body.extra', 'body'));
    }
    expect(await balances(alice)).toEqual({ EUR: '10.00', XOF: '1000' });
  });

  it('404 RecipientNotFound, 422 SelfTransfer and InsufficientFunds; none consumes the key', async () => {
    const alice = await createCaller(app, { XOF: 1_000n });
    const bob = await createCaller(app);
    const key = crypto.randomUUID();
    const unknown = await transfer(alice, { amount: 1, currency: 'XOF', recipientIdentifier: 'nobody@test.example' }, key);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ success: false, error: 'RecipientNotFound' });
    const self = await transfer(alice, { amount: 1, currency: 'XOF', recipientIdentifier: alice.user.email }, key);
    expect(self.status).toBe(422);
    expect(self.body.error).toBe('SelfTransfer');
    const poor = await transfer(alice, { amount: 1_001, currency: 'XOF', recipientIdentifier: bob.user.email }, key);
    expect(poor.status).toBe(422);
    expect(poor.body).toEqual({
      success: false,
      error: 'InsufficientFunds',
      message: expect.any(String),
      details: { currency: 'XOF', available: '1000', required: '1001' },
    });
    const ok = await transfer(alice, { amount: 1_000, currency: 'XOF', recipientIdentifier: bob.user.email }, key);
    expect(ok.status).toBe(200);
  });
});

describe('sessions', () => {
  it('a logged-out session or a locked account stops moving money at once: 401, nothing moves, the key stays free', async () => {
    const alice = await createCaller(app, { XOF: 1_000n });
    const bob = await createCaller(app);
    const key = crypto.randomUUID();
    await request(app).post('/api/auth/logout').set(alice.auth).expect(200);
    const ended = await transfer(alice, { amount: 100, currency: 'XOF', recipientIdentifier: bob.user.email }, key);
    expect(ended.status).toBe(401);
    expect(ended.body).toMatchObject({ success: false, error: 'Unauthorized', message: 'The session has ended: log in again.' });
    expect(ended.headers['www-authenticate']).toBe('Bearer realm="api"');

    const carol = await createCaller(app, { XOF: 1_000n });
    await knex('users').where({ id: carol.user.id }).update({ status: 'locked' });
    const locked = await transfer(carol, { amount: 100, currency: 'XOF', recipientIdentifier: bob.user.email }, key);
    expect(locked.status).toBe(401);
    expect(locked.body).toMatchObject({ success: false, error: 'Unauthorized', message: 'The account is locked.' });
    await knex('users').where({ id: carol.user.id }).update({ status: 'active' });

    expect(await knex('transfers').whereIn('sender_user_id', [alice.user.id, carol.user.id])).toEqual([]);
    expect(await knex('idempotency_keys').where({ key })).toEqual([]);
    expect(await balances(carol)).toEqual({ XOF: '1000' });
  });
});

describe('idempotency', () => {
  it('a replay answers 409 IdempotencyKeyAlreadyProcessed with the transfer; another body 422; the key can be inspected', async () => {
    const alice = await createCaller(app, { EUR: 10_000n });
    const bob = await createCaller(app);
    const key = crypto.randomUUID();
    const body = { amount: 12.5, currency: 'EUR', recipientIdentifier: bob.user.email };
    const first = await transfer(alice, body, key).expect(200);
    const replay = await transfer(alice, { recipientIdentifier: bob.user.email, currency: 'EUR', amount: 12.5 }, key);
    expect(replay.status).toBe(409);
    expect(replay.headers.location).toBe(`/api/transfers/${first.body.data.id}`);
    expect(replay.body).toEqual({
      success: false,
      error: 'IdempotencyKeyAlreadyProcessed',
      message: expect.any(String),
      details: { resource_type: 'transfer', resource_id: first.body.data.id, status: 'completed' },
    });
    const reused = await transfer(alice, { ...body, amount: 13 }, key);
    expect(reused.status).toBe(422);
    expect(reused.body.error).toBe('IdempotencyKeyReused');
    // A client whose body serialised differently still learns what its key produced.
    expect(reused.body.details).toEqual({ operation: 'createTransfer', resource_type: 'transfer', resource_id: first.body.data.id, status: 'completed' });
    expect(reused.headers.location).toBe(`/api/transfers/${first.body.data.id}`);
    expect(await balances(alice)).toEqual({ EUR: '87.50' });
    // Another user may use the same key.
    await transfer(await createCaller(app, { EUR: 5_000n }), body, key).expect(200);

    const state = await request(app).get(`/api/idempotency-keys/${encodeURIComponent(key)}`).set(alice.auth).expect(200);
    expect(state.body.data).toMatchObject({
      key,
      operation: 'createTransfer',
      status: 'completed',
      response_status: 200,
      resource: { type: 'transfer', id: first.body.data.id, status: 'completed', location: `/api/transfers/${first.body.data.id}` },
    });
    await request(app).get(`/api/idempotency-keys/${encodeURIComponent(key)}`).query({ operation: 'createEscrow' }).set(alice.auth).expect(404);
    const foreign = await request(app).get(`/api/idempotency-keys/${crypto.randomUUID()}`).set(alice.auth).expect(404);
    expect(foreign.body.error).toBe('IdempotencyKeyNotFound');
  });

  it('a replay after the transfer spent the whole balance still answers 409 with the transfer, never 422 InsufficientFunds', async () => {
    const alice = await createCaller(app, { XOF: 1_000n });
    const bob = await createCaller(app);
    const key = crypto.randomUUID();
    const body = { amount: 1_000, currency: 'XOF', recipientIdentifier: bob.user.email };
    const first = await transfer(alice, body, key).expect(200);
    expect(await balances(alice)).toEqual({ XOF: '0' });
    const replay = await transfer(alice, body, key);
    expect({ status: replay.status, error: replay.body.error }).toEqual({ status: 409, error: 'IdempotencyKeyAlreadyProcessed' });
    expect(replay.body.details).toEqual({ resource_type: 'transfer', resource_id: first.body.data.id, status: 'completed' });
    // The same holds when the recipient has since been disabled: the key answers first.
    await knex('users').where({ id: bob.user.id }).update({ status: 'disabled' });
    expect((await transfer(alice, body, key)).body.error).toBe('IdempotencyKeyAlreadyProcessed');
    // A new key is judged on today's state.
    expect((await transfer(alice, body)).status).toBe(404);
    expect(await balances(alice)).toEqual({ XOF: '0' });
  });

  it('a refused request releases its key: after funding, the same key succeeds', async () => {
    const alice = await createCaller(app, { XOF: 100n });
    const bob = await createCaller(app);
    const key = crypto.randomUUID();
    const body = { amount: 500, currency: 'XOF', recipientIdentifier: bob.user.email };
    expect((await transfer(alice, body, key)).body.error).toBe('InsufficientFunds');
    await withTransaction(knex, (trx) => fundWallet(trx, alice.user.id, 'XOF', 400n));
    await transfer(alice, body, key).expect(200);
    expect(await balances(alice)).toEqual({ XOF: '0' });
  });

  it('20 parallel requests with one key: exactly one 200, the rest 409, money moved once', async () => {
    const alice = await createCaller(app, { XOF: 100_000n });
    const bob = await createCaller(app);
    const key = crypto.randomUUID();
    const responses = await Promise.all(Array.from({ length: 20 }, () => transfer(alice, { amount: 700, currency: 'XOF', recipientIdentifier: bob.user.email }, key)));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(19);
    for (const r of responses.filter((x) => x.status === 409)) {
      expect(['ConcurrentOperation', 'IdempotencyKeyAlreadyProcessed']).toContain(r.body.error);
      if (r.body.error === 'ConcurrentOperation') expect(r.headers['retry-after']).toBe('1');
    }
    expect(await balances(alice)).toEqual({ XOF: '99300' });
    expect(await balances(bob)).toEqual({ XOF: '700' });
    await expectLedgerInvariants(knex);
  });

  it('20 parallel requests with one key for the whole balance: one 200 and nineteen 409, never InsufficientFunds', async () => {
    const alice = await createCaller(app, { XOF: 700n });
    const bob = await createCaller(app);
    const key = crypto.randomUUID();
    const responses = await Promise.all(Array.from({ length: 20 }, () => transfer(alice, { amount: 700, currency: 'XOF', recipientIdentifier: bob.user.email }, key)));
    expect(responses.filter((r) => r.status === 200)).toHaveLength(1);
    expect(responses.filter((r) => r.status === 409)).toHaveLength(19);
    expect(await balances(alice)).toEqual({ XOF: '0' });
    await expectLedgerInvariants(knex);
  });

  it('parallel replays of a completed key all answer 409 IdempotencyKeyAlreadyProcessed, never ConcurrentOperation', async () => {
    const alice = await createCaller(app, { XOF: 10_000n });
    const bob = await createCaller(app);
    const key = crypto.randomUUID();
    const body = { amount: 700, currency: 'XOF', recipientIdentifier: bob.user.email };
    const first = await transfer(alice, body, key).expect(200);
    for (let round = 0; round < 3; round += 1) {
      const replays = await Promise.all(Array.from({ length: 12 }, () => transfer(alice, body, key)));
      expect(replays.map((r) => ({ status: r.status, error: r.body.error, id: r.body.details?.resource_id }))).toEqual(
        replays.map(() => ({ status: 409, error: 'IdempotencyKeyAlreadyProcessed', id: first.body.data.id })),
      );
    }
    expect(await balances(alice)).toEqual({ XOF: '9300' });
  });
});

describe('note', () => {
  it('is counted in characters, as the contract says: 280 emoji pass, 281 characters do not', async () => {
    const alice = await createCaller(app, { XOF: 100n });
    const bob = await createCaller(app);
    const ok = await transfer(alice, { amount: 1, currency: 'XOF', recipientIdentifier: bob.user.email, note: '💸'.repeat(280) }).expect(200);
    expect([...ok.body.data.note]).toHaveLength(280);
    const tooLong = await transfer(alice, { amount: 1, currency: 'XOF', recipientIdentifier: bob.user.email, note: '💸'.repeat(281) });
    expect({ status: tooLong.status, error: tooLong.body.error }).toEqual({ status: 400, error: 'ValidationError' });
  });
});

describe('concurrency', () => {
  it('50 parallel transfers that together exceed the balance: exactly the affordable ones succeed', async () => {
    const alice = await createCaller(app, { XOF: 10_000n });
    const recipients = await Promise.all(Array.from({ length: 5 }, () => createCaller(app)));
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) => transfer(alice, { amount: 300, currency: 'XOF', recipientIdentifier: recipients[i % 5]!.user.email })),
    );
    const ok = responses.filter((r) => r.status === 200);
    const refused = responses.filter((r) => r.status !== 200);
    expect(ok).toHaveLength(33); // floor(10000 / 300)
    expect(refused).toHaveLength(17);
    for (const r of refused) expect({ status: r.status, error: r.body.error }).toEqual({ status: 422, error: 'InsufficientFunds' });
    expect(await balances(alice)).toEqual({ XOF: '100' });
    let received = 0;
    for (const r of recipients) received += Number((await balances(r)).XOF ?? '0');
    expect(received).toBe(9_900);
    await expectLedgerInvariants(knex);
  });
});

describe('bank and mobile money (sandbox)', () => {
  it('bank: pending, then completed; a magic IBAN fails and the money comes back', async () => {
    const alice = await createCaller(app, { EUR: 100_000n });
    const ok = await transfer(alice, { amount: 150.25, currency: 'EUR', recipientIdentifier: 'FR76 3000 6000 0112 3456 7890 189', note: 'Invoice 42' }).expect(200);
    expect(ok.body.data).toMatchObject({ status: 'pending', rail: 'bank', recipient: { identifier: 'FR7630006000011234567890189', type: 'iban' } });
    const ko = await transfer(alice, { amount: 100, currency: 'EUR', recipientIdentifier: 'DE40370400440532010002', rail: 'bank' }).expect(200);
    expect(ko.body.data.status).toBe('pending');
    expect(await balances(alice)).toEqual({ EUR: '749.75' });
    await settleRails();
    expect((await request(app).get(`/api/transfers/${ok.body.data.id}`).set(alice.auth).expect(200)).body.data).toMatchObject({ status: 'completed' });
    expect((await request(app).get(`/api/transfers/${ko.body.data.id}`).set(alice.auth).expect(200)).body.data).toMatchObject({
      status: 'failed',
      failure_code: 'account_closed',
      failure_reason: 'The beneficiary bank account is closed.',
    });
    expect(await balances(alice)).toEqual({ EUR: '849.75' });
    await expectLedgerInvariants(knex);
  });

  it('mobile money to a number that is no user; a replay reports the settled status', async () => {
    const alice = await createCaller(app, { XOF: 50_000n });
    const key = crypto.randomUUID();
    const body = { amount: 5_000, currency: 'XOF', recipientIdentifier: '+2250700000002' };
    const res = await transfer(alice, body, key).expect(200);
    expect(res.body.data).toMatchObject({ status: 'pending', rail: 'mobile_money', recipient: { identifier: '+2250700000002', type: 'msisdn' } });
    await settleRails();
    const replay = await transfer(alice, body, key).expect(409);
    expect(replay.body.details).toEqual({ resource_type: 'transfer', resource_id: res.body.data.id, status: 'failed' });
    expect(await balances(alice)).toEqual({ XOF: '50000' });
    const bob = await createCaller(app, {}, { phone: uniquePhone() });
    const toUser = await transfer(alice, { amount: 1, currency: 'XOF', recipientIdentifier: bob.user.phone }).expect(200);
    expect(toUser.body.data.rail).toBe('p2p');
  });
});

describe('GET /transfers', () => {
  it('pages with limit and starting_after', async () => {
    const alice = await createCaller(app, { XOF: 100n });
    const bob = await createCaller(app);
    for (let i = 1; i <= 3; i += 1) await transfer(alice, { amount: i, currency: 'XOF', recipientIdentifier: bob.user.email }).expect(200);
    const page1 = await request(app).get('/api/transfers').query({ limit: 2 }).set(alice.auth).expect(200);
    expect(page1.body.data.data.map((t: { amount: number }) => t.amount)).toEqual([3, 2]);
    expect(page1.body.data.has_more).toBe(true);
    const page2 = await request(app).get('/api/transfers').query({ limit: 2, starting_after: page1.body.data.next_cursor }).set(alice.auth).expect(200);
    expect(page2.body.data).toMatchObject({ has_more: false, next_cursor: null });
    expect(page2.body.data.data.map((t: { amount: number }) => t.amount)).toEqual([1]);
    expect((await request(app).get('/api/transfers').set(bob.auth).expect(200)).body.data.data).toEqual([]);
    await request(app).get('/api/transfers').query({ starting_after: page1.body.data.next_cursor }).set(bob.auth).expect(400);
    await request(app).get('/api/transfers').query({ limit: 0 }).set(alice.auth).expect(400);
    await request(app).get('/api/transfers').query({ page: 2 }).set(alice.auth).expect(400);
    await request(app).get('/api/transfers/not-a-uuid').set(alice.auth).expect(400);
  });
});
