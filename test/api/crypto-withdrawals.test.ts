import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { cryptoCaller } from '../support/crypto';
import { testKnex } from '../support/database';
import { walletBalance, type TestCaller } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';

const TRON = 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t';
/** The TRON network fee (crypto-assets.json): 1 USDT. */
const TRON_FEE = 1_000_000n;

let app: App;
beforeAll(async () => {
  app = await buildTestApp();
});

const key = () => crypto.randomUUID();

/** A TRON USDT address of the caller's, active unless `pending`. */
async function addressOf(caller: TestCaller, pending = false): Promise<string> {
  const res = await request(app).post('/api/crypto/withdrawal-addresses').set(caller.auth).send({ asset: 'USDT', network: 'tron', address: TRON, label: 'Exchange' });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  if (!pending) await testKnex()('crypto_withdrawal_addresses').where({ id: res.body.data.id }).update({ active_at: new Date(Date.now() - 1000) });
  return res.body.data.id as string;
}

function withdraw(caller: TestCaller, body: Record<string, unknown>, idempotencyKey = key()) {
  return request(app).post('/api/crypto/withdrawals').set(caller.auth).set('Idempotency-Key', idempotencyKey).send(body);
}

const mine = (count: number) => request(app).post('/api/test-helpers/crypto/networks/tron/blocks').send({ count });
const show = (caller: TestCaller, id: string) => request(app).get(`/api/crypto/withdrawals/${id}`).set(caller.auth);

describe('POST /crypto/withdrawals', () => {
  it('reserves the amount and the network fee at once, then goes queued -> broadcast -> confirming -> completed as blocks are mined', async () => {
    const caller = await cryptoCaller(app, { USDT: 500_000_000n });
    const addressId = await addressOf(caller);
    const res = await withdraw(caller, { withdrawal_address_id: addressId, amount: '100' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data).toMatchObject({ object: 'crypto_withdrawal', asset: 'USDT', network: 'tron', address: TRON, amount: '100.000000', fee: '1.000000', total: '101.000000', status: 'queued', cancelable: true, tx_hash: null });
    expect(await walletBalance(caller.user.id, 'USDT')).toBe(500_000_000n - 100_000_000n - TRON_FEE);
    const id = res.body.data.id as string;

    await mine(1);
    const broadcast = await show(caller, id);
    expect(broadcast.body.data).toMatchObject({ status: 'broadcast', confirmations: 0, cancelable: false });
    expect(broadcast.body.data.tx_hash).toMatch(/^[0-9a-f]{64}$/);

    await mine(5);
    expect((await show(caller, id)).body.data).toMatchObject({ status: 'confirming', confirmations: 5 });
    await mine(15);
    const completed = await show(caller, id);
    expect(completed.body.data).toMatchObject({ status: 'completed', confirmations: 20 });
    expect(completed.body.data.completed_at).not.toBeNull();
    expect(await walletBalance(caller.user.id, 'USDT')).toBe(500_000_000n - 100_000_000n - TRON_FEE);

    const events = await request(app).get('/api/events').set(caller.auth);
    const types = (events.body.data.data as Array<{ type: string; object_id: string; sequence: number }>).filter((e) => e.object_id === id);
    expect(types.map((e) => e.type).sort()).toEqual(['crypto.withdrawal.broadcast', 'crypto.withdrawal.completed', 'crypto.withdrawal.created']);
    await expectLedgerInvariants(testKnex());
  });

  it('is canceled before broadcast: canceled, the amount and the fee back in the wallet', async () => {
    const caller = await cryptoCaller(app, { USDT: 50_000_000n });
    const addressId = await addressOf(caller);
    const created = await withdraw(caller, { withdrawal_address_id: addressId, amount: '20' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(await walletBalance(caller.user.id, 'USDT')).toBe(29_000_000n);
    const res = await request(app).post(`/api/crypto/withdrawals/${created.body.data.id}/cancel`).set(caller.auth);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'canceled', cancelable: false });
    expect(await walletBalance(caller.user.id, 'USDT')).toBe(50_000_000n);
    // The sender asks before it broadcasts: a canceled withdrawal never leaves.
    await mine(25);
    expect((await show(caller, created.body.data.id)).body.data).toMatchObject({ status: 'canceled', tx_hash: null });
    expect(await walletBalance(caller.user.id, 'USDT')).toBe(50_000_000n);
    await expectLedgerInvariants(testKnex());
  });

  it('refuses a cancel after broadcast with 409 WithdrawalNotCancelable, changing nothing', async () => {
    const caller = await cryptoCaller(app, { USDT: 50_000_000n });
    const addressId = await addressOf(caller);
    const created = await withdraw(caller, { withdrawal_address_id: addressId, amount: '20' });
    await mine(1);
    const res = await request(app).post(`/api/crypto/withdrawals/${created.body.data.id}/cancel`).set(caller.auth);
    expect(res.status, JSON.stringify(res.body)).toBe(409);
    expect(res.body).toMatchObject({ error: 'WithdrawalNotCancelable', details: { status: 'broadcast', allowed_from: ['created', 'queued'] } });
    expect(await walletBalance(caller.user.id, 'USDT')).toBe(29_000_000n);
  });

  it('a cancel racing the broadcast: either canceled and never sent, or sent and the cancel refused', async () => {
    const caller = await cryptoCaller(app, { USDT: 50_000_000n });
    const addressId = await addressOf(caller);
    const created = await withdraw(caller, { withdrawal_address_id: addressId, amount: '10' });
    const id = created.body.data.id as string;
    const [cancel] = await Promise.all([request(app).post(`/api/crypto/withdrawals/${id}/cancel`).set(caller.auth), mine(1)]);
    await mine(1);
    const after = (await show(caller, id)).body.data;
    if (cancel.status === 200) {
      expect(after).toMatchObject({ status: 'canceled', tx_hash: null });
      expect(await walletBalance(caller.user.id, 'USDT')).toBe(50_000_000n);
    } else {
      expect(cancel.body.error).toBe('WithdrawalNotCancelable');
      expect(['broadcast', 'confirming']).toContain(after.status);
      expect(after.tx_hash).not.toBeNull();
      expect(await walletBalance(caller.user.id, 'USDT')).toBe(39_000_000n);
    }
    await expectLedgerInvariants(testKnex());
  });

  it('fails on the network: failed, the amount and the fee returned once', async () => {
    const caller = await cryptoCaller(app, { USDT: 50_000_000n });
    const addressId = await addressOf(caller);
    const created = await withdraw(caller, { withdrawal_address_id: addressId, amount: '20' });
    await mine(3);
    const res = await request(app).post(`/api/test-helpers/crypto/withdrawals/${created.body.data.id}/fail`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'failed', total: '21.000000' });
    expect(await walletBalance(caller.user.id, 'USDT')).toBe(50_000_000n);
    const again = await request(app).post(`/api/test-helpers/crypto/withdrawals/${created.body.data.id}/fail`);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: 'WithdrawalAlreadyFinal', details: { status: 'failed' } });
    // The network forgot it: more blocks change nothing.
    await mine(25);
    expect((await show(caller, created.body.data.id)).body.data.status).toBe('failed');
    expect(await walletBalance(caller.user.id, 'USDT')).toBe(50_000_000n);
    await expectLedgerInvariants(testKnex());
  });

  it('lets one of two withdrawals racing for the same balance through; the other is refused with 422 InsufficientFunds', async () => {
    const caller = await cryptoCaller(app, { USDT: 30_000_000n });
    const addressId = await addressOf(caller);
    const [a, b] = await Promise.all([withdraw(caller, { withdrawal_address_id: addressId, amount: '20' }), withdraw(caller, { withdrawal_address_id: addressId, amount: '20' })]);
    expect([a.status, b.status].sort()).toEqual([201, 422]);
    expect((a.status === 422 ? a : b).body.error).toBe('InsufficientFunds');
    expect(await walletBalance(caller.user.id, 'USDT')).toBe(9_000_000n);
    const list = await request(app).get('/api/crypto/withdrawals').set(caller.auth);
    expect(list.body.data.data).toHaveLength(1);
    await expectLedgerInvariants(testKnex());
  });

  it('needs the fee as well as the amount: 422 InsufficientFunds when only the amount is there', async () => {
    const caller = await cryptoCaller(app, { USDT: 20_000_000n });
    const res = await withdraw(caller, { withdrawal_address_id: await addressOf(caller), amount: '20' });
    expect(res.status).toBe(422);
    expect(res.body.error).toBe('InsufficientFunds');
  });

  it('asks for the beneficiary at 1,000 USD and not below (Travel Rule)', async () => {
    const caller = await cryptoCaller(app, { USDT: 3_000_000_000n });
    const addressId = await addressOf(caller);
    const below = await withdraw(caller, { withdrawal_address_id: addressId, amount: '999.999999' });
    expect(below.status, JSON.stringify(below.body)).toBe(201);
    expect(below.body.data.beneficiary).toBeNull();
    const at = await withdraw(caller, { withdrawal_address_id: addressId, amount: '1000' });
    expect(at.status).toBe(422);
    expect(at.body).toMatchObject({ error: 'TravelRuleInformationRequired', details: { threshold_usd: '1000', required: ['beneficiary.name', 'beneficiary.country'] } });
    const named = await withdraw(caller, { withdrawal_address_id: addressId, amount: '1000', beneficiary: { name: 'Awa Traore', country: 'CI' } });
    expect(named.status, JSON.stringify(named.body)).toBe(201);
    expect(named.body.data.beneficiary).toEqual({ name: 'Awa Traore', country: 'CI' });
  });

  it('refuses an address not yet active with 409 WithdrawalAddressNotActive, and an unknown or foreign one with 404', async () => {
    const caller = await cryptoCaller(app, { USDT: 50_000_000n });
    const pending = await withdraw(caller, { withdrawal_address_id: await addressOf(caller, true), amount: '1' });
    expect(pending.status).toBe(409);
    expect(pending.body.error).toBe('WithdrawalAddressNotActive');
    expect(new Date(pending.body.details.active_at).getTime()).toBeGreaterThan(Date.now());
    const other = await cryptoCaller(app);
    const foreign = await withdraw(caller, { withdrawal_address_id: await addressOf(other), amount: '1' });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('WithdrawalAddressNotFound');
    expect(await walletBalance(caller.user.id, 'USDT')).toBe(50_000_000n);
  });

  it('refuses a user below tier_2 with 403 VerificationRequired', async () => {
    const caller = await cryptoCaller(app, { USDT: 50_000_000n }, 'tier_1');
    const res = await withdraw(caller, { withdrawal_address_id: crypto.randomUUID(), amount: '1' });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('VerificationRequired');
  });

  it('answers a replayed Idempotency-Key with 409 IdempotencyKeyAlreadyProcessed, reserving once', async () => {
    const caller = await cryptoCaller(app, { USDT: 50_000_000n });
    const addressId = await addressOf(caller);
    const idempotencyKey = key();
    const first = await withdraw(caller, { withdrawal_address_id: addressId, amount: '5' }, idempotencyKey);
    expect(first.status).toBe(201);
    const replay = await withdraw(caller, { withdrawal_address_id: addressId, amount: '5' }, idempotencyKey);
    expect(replay.status).toBe(409);
    expect(replay.body.error).toBe('IdempotencyKeyAlreadyProcessed');
    expect(await walletBalance(caller.user.id, 'USDT')).toBe(44_000_000n);
  });
});

describe('the network sender', () => {
  it('takes again what was not handed over (the sandbox clock resubmits), and broadcasts each withdrawal once however often it is resubmitted', async () => {
    const caller = await cryptoCaller(app, { USDT: 50_000_000n });
    const addressId = await addressOf(caller);
    const created = await withdraw(caller, { withdrawal_address_id: addressId, amount: '3' });
    const id = created.body.data.id as string;
    // As if the request's hand-over had failed after its commit: the row is still created.
    await testKnex()('crypto_withdrawals').where({ id }).update({ status: 'created' });
    expect(await app.services.cryptoWithdrawals.resubmit()).toBeGreaterThanOrEqual(1);
    expect((await show(caller, id)).body.data.status).toBe('queued');
    await app.services.cryptoWithdrawals.resubmit();
    await mine(1);
    const broadcast = await show(caller, id);
    expect(broadcast.body.data.status).toBe('broadcast');
    await app.services.cryptoWithdrawals.resubmit();
    await mine(20);
    expect((await show(caller, id)).body.data).toMatchObject({ status: 'completed', tx_hash: broadcast.body.data.tx_hash });
    const events = (await testKnex()('events').where({ subject_type: 'crypto_withdrawal', subject_id: id }).select('type')) as Array<{ type: string }>;
    expect(events.map((e) => e.type).sort()).toEqual(['crypto.withdrawal.broadcast', 'crypto.withdrawal.completed', 'crypto.withdrawal.created']);
    expect(await walletBalance(caller.user.id, 'USDT')).toBe(46_000_000n);
  });
});

describe('GET /crypto/withdrawals', () => {
  it("shows the caller's own withdrawals only; another's answers 404", async () => {
    const caller = await cryptoCaller(app, { USDT: 50_000_000n });
    const other = await cryptoCaller(app);
    const created = await withdraw(caller, { withdrawal_address_id: await addressOf(caller), amount: '2' });
    expect((await request(app).get('/api/crypto/withdrawals').set(other.auth)).body.data.data).toEqual([]);
    const foreign = await show(other, created.body.data.id);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('CryptoWithdrawalNotFound');
    const mine_ = await request(app).get('/api/crypto/withdrawals').set(caller.auth);
    expect(mine_.body.data.data.map((w: { id: string }) => w.id)).toEqual([created.body.data.id]);
  });

  it('shows each network’s withdrawal fee in GET /crypto/assets', async () => {
    const caller = await cryptoCaller(app);
    const res = await request(app).get('/api/crypto/assets').set(caller.auth);
    const tron = (res.body.data.data[0].networks as Array<{ code: string; withdrawal_fee: string }>).find((n) => n.code === 'tron');
    expect(tron?.withdrawal_fee).toBe('1');
  });
});
