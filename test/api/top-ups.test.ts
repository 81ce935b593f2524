import crypto from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MOBILE_MONEY_CALLBACK_SECRET } from '../../src/config';
import { setAccountStatus, walletOf } from '../../src/modules/ledger';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { createCaller, type TestCaller } from '../support/factories';
import { balanceOf, expectLedgerInvariants, postingEntries } from '../support/ledger-invariants';

let app: App;
let clockOffsetMs = 0;
const rail = new Webhook(DEFAULT_MOBILE_MONEY_CALLBACK_SECRET);

beforeAll(async () => {
  app = await buildTestApp({ now: () => new Date(Date.now() + clockOffsetMs) });
});

interface Payer {
  caller: TestCaller;
  walletId: string;
}

async function payer(currency = 'XOF'): Promise<Payer> {
  const caller = await createCaller(app);
  const wallet = await walletOf(testKnex(), caller.user.id, currency);
  return { caller, walletId: wallet.id };
}

function topUp(who: Payer, body: Record<string, unknown> = {}, key = crypto.randomUUID()) {
  return request(app)
    .post(`/api/wallets/${who.walletId}/top-ups`)
    .set(who.caller.auth)
    .set('Idempotency-Key', key)
    .send({ amount: 25000, method: 'mobile_money', provider: 'orange_money', msisdn: '+2250700009999', ...body });
}

/** A callback as the rail sends it: the raw body signed by an independent Standard Webhooks signer. */
function callback(body: Record<string, unknown>, options: { id?: string; at?: Date; secret?: string } = {}) {
  const raw = JSON.stringify(body);
  const id = options.id ?? `msg_${crypto.randomUUID()}`;
  const at = options.at ?? new Date();
  const signer = options.secret ? new Webhook(options.secret) : rail;
  return request(app)
    .post('/api/rails/mobile-money/callbacks')
    .set('Content-Type', 'application/json')
    .set('webhook-id', id)
    .set('webhook-timestamp', String(Math.floor(at.getTime() / 1000)))
    .set('webhook-signature', signer.sign(id, at, raw))
    .send(raw);
}

async function eventsOf(topUpId: string): Promise<string[]> {
  const rows = await testKnex()('events').where({ subject_type: 'top_up', subject_id: topUpId }).orderBy('object_sequence').select('type');
  return rows.map((row: { type: string }) => row.type);
}

describe('POST /wallets/{walletId}/top-ups', () => {
  it('answers 202 pending with the provider reference, and lists and reads it back', async () => {
    const who = await payer();
    const res = await topUp(who);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.data).toMatchObject({ object: 'top_up', status: 'pending', amount: 25000, amount_minor: '25000', currency: 'XOF', provider: 'orange_money', wallet_id: who.walletId, failure_code: null, settled_at: null });
    expect(res.body.data.provider_reference).toMatch(/^[0-9a-f-]{36}$/);

    const one = await request(app).get(`/api/wallets/${who.walletId}/top-ups/${res.body.data.id}`).set(who.caller.auth);
    expect(one.status).toBe(200);
    expect(one.body.data).toEqual(res.body.data);
    const list = await request(app).get(`/api/wallets/${who.walletId}/top-ups`).set(who.caller.auth);
    expect(list.body.data.data.map((t: { id: string }) => t.id)).toEqual([res.body.data.id]);
    expect(await balanceOf(testKnex(), who.walletId)).toBe(0n);
  });

  it('takes the amount in the wallet currency exponent (EUR cents) and refuses finer amounts', async () => {
    const who = await payer('EUR');
    const res = await topUp(who, { amount: 12.34 });
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ currency: 'EUR', amount_minor: '1234' });
    expect((await topUp(who, { amount: 12.345 })).status).toBe(400);
  });

  it('replays a key with 409 and the top-up, and never records a second top-up', async () => {
    const who = await payer();
    const key = crypto.randomUUID();
    const first = await topUp(who, {}, key);
    const again = await topUp(who, {}, key);
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('IdempotencyKeyAlreadyProcessed');
    expect(again.headers.location).toBe(`/api/wallets/${who.walletId}/top-ups/${first.body.data.id}`);
    expect(Number((await testKnex()('top_ups').where({ wallet_id: who.walletId }).count({ n: '*' }))[0]?.n)).toBe(1);
  });

  it('answers 404 WalletNotFound for another user wallet, and 404 TopUpNotFound for their top-up', async () => {
    const owner = await payer();
    const other = await payer();
    const created = await topUp(owner);
    const foreign = await topUp({ caller: other.caller, walletId: owner.walletId });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('WalletNotFound');
    const read = await request(app).get(`/api/wallets/${owner.walletId}/top-ups/${created.body.data.id}`).set(other.caller.auth);
    expect(read.status).toBe(404);
    expect(read.body.error).toBe('TopUpNotFound');
  });
});

describe('settling a top-up', () => {
  it('approve (sandbox): succeeded, the whole amount credited from the rail clearing account, one event', async () => {
    const who = await payer();
    const created = await topUp(who);
    const res = await request(app).post(`/api/test-helpers/top-ups/${created.body.data.id}/approve`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'succeeded', failure_code: null });
    expect(res.body.data.settled_at).not.toBeNull();
    expect(await balanceOf(testKnex(), who.walletId)).toBe(25000n);
    expect(await postingEntries(testKnex(), 'top_up.credit', created.body.data.id)).toEqual([
      { account: 'external_clearing', owner: null, currency: 'XOF', amount: -25000n },
      { account: 'wallet', owner: who.caller.user.id, currency: 'XOF', amount: 25000n },
    ]);
    expect(await eventsOf(created.body.data.id)).toEqual(['top_up.succeeded']);
    await expectLedgerInvariants(testKnex());
  });

  it('decline (sandbox): failed with failure_code declined, no money moved', async () => {
    const who = await payer();
    const created = await topUp(who);
    const res = await request(app).post(`/api/test-helpers/top-ups/${created.body.data.id}/decline`);
    expect(res.body.data).toMatchObject({ status: 'failed', failure_code: 'declined' });
    expect(await balanceOf(testKnex(), who.walletId)).toBe(0n);
    expect(await eventsOf(created.body.data.id)).toEqual(['top_up.failed']);
    // Settled once: approving afterwards changes nothing.
    const late = await request(app).post(`/api/test-helpers/top-ups/${created.body.data.id}/approve`);
    expect(late.body.data.status).toBe('failed');
    expect(await balanceOf(testKnex(), who.walletId)).toBe(0n);
  });

  it('a signed callback settles it once: a second callback for the same reference credits nothing more', async () => {
    const who = await payer();
    const created = await topUp(who);
    const reference = created.body.data.provider_reference as string;
    const first = await callback({ provider_reference: reference, status: 'succeeded' });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.data).toEqual({ object: 'rail_callback', provider_reference: reference, status: 'succeeded' });
    const second = await callback({ provider_reference: reference, status: 'failed', failure_code: 'declined' });
    expect(second.status).toBe(200);
    expect(second.body.data.status).toBe('succeeded');
    expect(await balanceOf(testKnex(), who.walletId)).toBe(25000n);
    expect(await eventsOf(created.body.data.id)).toEqual(['top_up.succeeded']);
    await expectLedgerInvariants(testKnex());
  });

  it('callbacks and the sandbox racing for one top-up settle it once: one credit, one event', async () => {
    const who = await payer();
    const created = await topUp(who);
    const reference = created.body.data.provider_reference as string;
    const answers = await Promise.all([
      ...Array.from({ length: 4 }, () => callback({ provider_reference: reference, status: 'succeeded' })),
      request(app).post(`/api/test-helpers/top-ups/${created.body.data.id}/approve`),
    ]);
    expect(answers.map((answer) => [answer.status, answer.body.data?.status])).toEqual(Array.from({ length: 5 }, () => [200, 'succeeded']));
    expect(await balanceOf(testKnex(), who.walletId)).toBe(25000n);
    expect(await eventsOf(created.body.data.id)).toEqual(['top_up.succeeded']);
    await expectLedgerInvariants(testKnex());
  });

  it('a failed callback carries the provider failure code', async () => {
    const who = await payer();
    const created = await topUp(who);
    const res = await callback({ provider_reference: created.body.data.provider_reference, status: 'failed', failure_code: 'payer_timeout' });
    expect(res.body.data.status).toBe('failed');
    const read = await request(app).get(`/api/wallets/${who.walletId}/top-ups/${created.body.data.id}`).set(who.caller.auth);
    expect(read.body.data).toMatchObject({ status: 'failed', failure_code: 'payer_timeout' });
  });

  it('a credit the ledger refuses (a frozen wallet) is reversed, never credited, and the payer is paid back', async () => {
    const who = await payer();
    const created = await topUp(who);
    await setAccountStatus(testKnex(), who.walletId, 'frozen');
    const res = await callback({ provider_reference: created.body.data.provider_reference, status: 'succeeded' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.status).toBe('reversed');
    const read = await request(app).get(`/api/wallets/${who.walletId}/top-ups/${created.body.data.id}`).set(who.caller.auth);
    expect(read.body.data).toMatchObject({ status: 'reversed', failure_code: 'account_frozen' });
    expect(await balanceOf(testKnex(), who.walletId)).toBe(0n);
    expect(await postingEntries(testKnex(), 'top_up.credit', created.body.data.id)).toEqual([]);
    expect(app.services.mobileMoneyRail.wasGivenBack(created.body.data.provider_reference)).toBe(true);
    expect(await eventsOf(created.body.data.id)).toEqual(['top_up.reversed']);
    await expectLedgerInvariants(testKnex());
  });
});

describe('POST /rails/mobile-money/callbacks refusals', () => {
  it('401 InvalidSignature for a body signed with another secret, a tampered body, or no signature', async () => {
    const who = await payer();
    const created = await topUp(who);
    const body = { provider_reference: created.body.data.provider_reference, status: 'succeeded' };
    const otherSecret = `whsec_${crypto.randomBytes(24).toString('base64')}`;
    const wrong = await callback(body, { secret: otherSecret });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('InvalidSignature');

    const id = 'msg_tampered';
    const at = new Date();
    const tampered = await request(app)
      .post('/api/rails/mobile-money/callbacks')
      .set('Content-Type', 'application/json')
      .set('webhook-id', id)
      .set('webhook-timestamp', String(Math.floor(at.getTime() / 1000)))
      .set('webhook-signature', rail.sign(id, at, JSON.stringify({ ...body, status: 'failed' })))
      .send(JSON.stringify(body));
    expect(tampered.status).toBe(401);

    const unsigned = await request(app).post('/api/rails/mobile-money/callbacks').send(body);
    expect(unsigned.status).toBe(401);
    expect(unsigned.body.error).toBe('InvalidSignature');
    const read = await request(app).get(`/api/wallets/${who.walletId}/top-ups/${created.body.data.id}`).set(who.caller.auth);
    expect(read.body.data.status).toBe('pending');
  });

  it('401 for a timestamp more than five minutes old; one just inside the window is accepted', async () => {
    const who = await payer();
    const created = await topUp(who);
    const body = { provider_reference: created.body.data.provider_reference, status: 'succeeded' };
    const old = await callback(body, { at: new Date(Date.now() - 301_000) });
    expect(old.status).toBe(401);
    expect(old.body.error).toBe('CallbackTimestampOutOfTolerance');
    const recent = await callback(body, { at: new Date(Date.now() - 280_000) });
    expect(recent.status).toBe(200);
  });

  it('409 CallbackReplayed for a webhook-id already received, even with a fresh signature', async () => {
    const who = await payer();
    const created = await topUp(who);
    const body = { provider_reference: created.body.data.provider_reference, status: 'succeeded' };
    const id = `msg_${crypto.randomUUID()}`;
    expect((await callback(body, { id })).status).toBe(200);
    const replay = await callback(body, { id });
    expect(replay.status).toBe(409);
    expect(replay.body.error).toBe('CallbackReplayed');
    expect(await balanceOf(testKnex(), who.walletId)).toBe(25000n);
  });

  it('404 TopUpNotFound for an unknown reference (and its webhook-id is not spent)', async () => {
    const id = `msg_${crypto.randomUUID()}`;
    const res = await callback({ provider_reference: crypto.randomUUID(), status: 'succeeded' }, { id });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('TopUpNotFound');
    const who = await payer();
    const created = await topUp(who);
    const later = await callback({ provider_reference: created.body.data.provider_reference, status: 'succeeded' }, { id });
    expect(later.status).toBe(200);
  });
});

describe('the job asking the rail about pending top-ups', () => {
  it('settles only top-ups pending for more than ten minutes, from what the rail answers', async () => {
    const who = await payer();
    const created = await topUp(who);
    const reference = created.body.data.provider_reference as string;
    app.services.mobileMoneyRail.decide(reference, { status: 'succeeded' });

    await app.services.topUps.checkPending({ batchSize: 1000 });
    expect((await testKnex()('top_ups').where({ id: created.body.data.id }).first('status')).status).toBe('pending');

    clockOffsetMs = 11 * 60_000;
    try {
      await app.services.topUps.checkPending({ batchSize: 1000 });
    } finally {
      clockOffsetMs = 0;
    }
    expect((await testKnex()('top_ups').where({ id: created.body.data.id }).first('status')).status).toBe('succeeded');
    expect(await balanceOf(testKnex(), who.walletId)).toBe(25000n);
    await expectLedgerInvariants(testKnex());
  });
});
