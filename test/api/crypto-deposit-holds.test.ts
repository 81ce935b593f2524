import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { cryptoCaller } from '../support/crypto';
import { testKnex } from '../support/database';
import { createCaller, walletBalance, type TestCaller } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { SHIPPED_LIMIT_POLICY } from '../support/limits';

/**
 * A final crypto deposit its owner's stablecoin limits refuse is held, never stranded, under
 * the shipped caps (a tier_2 user holds at most 16,666.66 USDC): the deposit
 * `held_for_verification` with its `credit`, the coins still in the network's clearing account,
 * a held payout of subject `crypto_deposit`; later reports never change it; the held payouts'
 * job credits it, once, when the owner's balance allows; an administrator cannot return it.
 */

let app: App;
const knex = testKnex();

beforeAll(async () => {
  app = await buildTestApp({ limitPolicy: SHIPPED_LIMIT_POLICY });
});

const NETWORK = 'base';
const FINALITY = 12;

async function addressOf(caller: TestCaller): Promise<string> {
  const res = await request(app).post('/api/crypto/deposit-addresses').set(caller.auth).send({ asset: 'USDC', network: NETWORK });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.address as string;
}

async function send(address: string, amount: string): Promise<{ id: string; tx_hash: string; output_index: number }> {
  const res = await request(app).post(`/api/test-helpers/crypto/networks/${NETWORK}/deposits`).send({ address, asset: 'USDC', amount });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

async function mine(count: number, reorgDepth?: number): Promise<void> {
  const res = await request(app).post(`/api/test-helpers/crypto/networks/${NETWORK}/blocks`).send({ count, ...(reorgDepth === undefined ? {} : { reorg_depth: reorgDepth }) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function depositOf(caller: TestCaller, id: string) {
  const res = await request(app).get(`/api/crypto/deposits/${id}`).set(caller.auth);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

async function creditPostings(depositId: string): Promise<number> {
  return Number(((await knex('postings').where({ kind: 'crypto.deposit', reference: depositId }).count('* as n').first()) as { n: string }).n);
}

async function clearingBalance(): Promise<bigint> {
  const row = await knex('ledger_accounts').where({ owner_type: 'platform', kind: 'external_clearing', currency: 'USDC', external_ref: `crypto:${NETWORK}` }).first('balance_minor');
  return BigInt((row?.balance_minor as string | undefined) ?? '0');
}

async function events(depositId: string): Promise<Array<{ type: string; object_sequence: number; data: { object: Record<string, unknown> } }>> {
  return knex('events').where({ subject_id: depositId }).orderBy('object_sequence').select('type', 'object_sequence', 'data');
}

/** Makes every held payout due now (the job tries each a minute after the hold, then backs off). */
async function makeDue(): Promise<void> {
  await knex('held_payouts').where({ status: 'held_for_verification' }).update({ next_attempt_at: knex.raw("now() - interval '1 second'") });
}

function returnHeld(by: TestCaller, id: string) {
  return request(app).post(`/api/admin/held-payouts/${id}/return`).set(by.auth).set('Idempotency-Key', crypto.randomUUID()).send({ reason: 'The sender asked for the coins back.' });
}

/** A tier_2 user holding 16,000 USDC, sent 1,000 USDC more (final): 17,000 is over their 16,666.66 balance cap. */
async function heldDepositOverTheCap() {
  const owner = await cryptoCaller(app, { USDC: 16_000_000_000n });
  const address = await addressOf(owner);
  const clearingBefore = await clearingBalance();
  const second = await send(address, '1000');
  await mine(5);
  await mine(FINALITY - 5);
  return { owner, second, clearingBefore };
}

describe('a final deposit over its owner\'s stablecoin balance cap', () => {
  it('is held (not credited, the clearing account unchanged, its event), listed for administrators, unchanged by later reports and reorganisations', async () => {
    const { owner, second, clearingBefore } = await heldDepositOverTheCap();
    const held = await depositOf(owner, second.id);
    expect(held).toMatchObject({ status: 'held_for_verification', confirmations: FINALITY, completed_at: null, amount: '1000.000000' });
    expect(held.credit).toEqual({ id: expect.any(String), status: 'held_for_verification', reason: 'recipient_limit', held_at: expect.any(String), settled_at: null });
    expect(await walletBalance(owner.user.id, 'USDC')).toBe(16_000_000_000n);
    expect(await clearingBalance()).toBe(clearingBefore);
    expect(await creditPostings(second.id)).toBe(0);
    const recorded = await events(second.id);
    expect(recorded.map((e) => e.type)).toEqual(['crypto.deposit.detected', 'crypto.deposit.confirming', 'crypto.deposit.held_for_verification']);
    expect(recorded.at(-1)?.data.object).toMatchObject({ id: second.id, status: 'held_for_verification', credit: held.credit });
    const personal = await request(app).get('/api/events').set(owner.auth);
    expect((personal.body.data.data as Array<{ type: string; object_id: string; sequence: number }>).find((e) => e.object_id === second.id && e.type === 'crypto.deposit.held_for_verification')?.sequence).toBe(3);

    const admin = await createCaller(app, {}, { isAdmin: true });
    const listed = await request(app).get('/api/admin/held-payouts').query({ status: 'held_for_verification' }).set(admin.auth);
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.data.data.find((h: { id: string }) => h.id === held.credit.id)).toEqual({
      id: held.credit.id,
      object: 'held_payout',
      subject_type: 'crypto_deposit',
      subject_id: second.id,
      cycle: null,
      recipient_user_id: owner.user.id,
      amount: '1000.000000',
      amount_minor: '1000000000',
      currency: 'USDC',
      status: 'held_for_verification',
      reason: 'recipient_limit',
      held_at: held.credit.held_at,
      settled_at: null,
      return_reason: null,
    });

    // More blocks, a reorganisation deeper than finality, the final report again: still held, never credited.
    await mine(5);
    await mine(2, FINALITY + 6);
    const report = { network: NETWORK, txHash: second.tx_hash, outputIndex: second.output_index, address: held.address as string, asset: 'USDC', amountMinor: 1_000_000_000n };
    expect(await app.services.cryptoDeposits.record({ ...report, confirmations: 40, dropped: false })).toMatchObject({ status: 'held_for_verification' });
    expect(await app.services.cryptoDeposits.record({ ...report, confirmations: 3, dropped: true })).toMatchObject({ status: 'held_for_verification' });
    expect(await depositOf(owner, second.id)).toEqual(held);
    expect(await creditPostings(second.id)).toBe(0);
    expect(await knex('held_payouts').where({ subject_id: second.id })).toHaveLength(1);
    expect((await events(second.id)).map((e) => e.type).at(-1)).toBe('crypto.deposit.held_for_verification');
    await expectLedgerInvariants(knex);
  });

  it('the job leaves it held while the cap still refuses it, then credits it once the owner spends down: credited once, completed, its event', async () => {
    const { owner, second, clearingBefore } = await heldDepositOverTheCap();
    const heldPayoutId = (await depositOf(owner, second.id)).credit.id as string;

    await makeDue();
    await app.services.heldPayouts.completeDue({ batchSize: 50 });
    expect(await depositOf(owner, second.id)).toMatchObject({ status: 'held_for_verification' });
    expect(await knex('held_payouts').where({ id: heldPayoutId }).first()).toMatchObject({ status: 'held_for_verification', attempts: 1 });
    expect(await creditPostings(second.id)).toBe(0);

    // The owner swaps 5,000 USDC for USDT: 11,000 USDC left, room for the held 1,000.
    const quoted = await request(app).post('/api/crypto/quotes').set(owner.auth).send({ from_currency: 'USDC', to_currency: 'USDT', from_amount: '5000' });
    expect(quoted.status, JSON.stringify(quoted.body)).toBe(201);
    const converted = await request(app).post('/api/crypto/conversions').set(owner.auth).set('Idempotency-Key', crypto.randomUUID()).send({ quote_id: quoted.body.data.id });
    expect(converted.status, JSON.stringify(converted.body)).toBe(201);
    expect(await walletBalance(owner.user.id, 'USDC')).toBe(11_000_000_000n);

    await makeDue();
    expect(await app.services.heldPayouts.completeDue({ batchSize: 50 })).toBeGreaterThanOrEqual(1);
    const completed = await depositOf(owner, second.id);
    expect(completed).toMatchObject({ status: 'completed', completed_at: expect.any(String) });
    expect(completed.credit).toEqual({ id: heldPayoutId, status: 'completed', reason: 'recipient_limit', held_at: expect.any(String), settled_at: completed.completed_at });
    expect(await walletBalance(owner.user.id, 'USDC')).toBe(12_000_000_000n);
    expect(await clearingBalance()).toBe(clearingBefore - 1_000_000_000n);
    expect(await creditPostings(second.id)).toBe(1);
    const posting = await knex('postings').where({ kind: 'crypto.deposit', reference: second.id }).first('id');
    expect(await knex('held_payouts').where({ id: heldPayoutId }).first()).toMatchObject({ status: 'completed', posting_id: posting.id });
    expect((await knex('crypto_deposits').where({ id: second.id }).first()).credit_posting_id).toBe(posting.id);
    expect((await events(second.id)).map((e) => [e.type, e.object_sequence])).toEqual([
      ['crypto.deposit.detected', 1],
      ['crypto.deposit.confirming', 2],
      ['crypto.deposit.held_for_verification', 3],
      ['crypto.deposit.completed', 4],
    ]);

    // Completed: later reports and runs of the job credit nothing more.
    await mine(3, FINALITY + 4);
    await makeDue();
    await app.services.heldPayouts.completeDue({ batchSize: 50 });
    expect(await creditPostings(second.id)).toBe(1);
    expect(await walletBalance(owner.user.id, 'USDC')).toBe(12_000_000_000n);
    await expectLedgerInvariants(knex);
  });

  it('an administrator cannot return it (409 HeldPayoutNotReturnable, nothing moved); once credited, 409 HeldPayoutNotHeld', async () => {
    const { owner, second, clearingBefore } = await heldDepositOverTheCap();
    const heldPayoutId = (await depositOf(owner, second.id)).credit.id as string;
    const admin = await createCaller(app, {}, { isAdmin: true });
    const refused = await returnHeld(admin, heldPayoutId);
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body).toMatchObject({ success: false, error: 'HeldPayoutNotReturnable' });
    expect(refused.body.message).toMatch(/credited to its owner once their tier or balance allows/);
    expect(await knex('held_payouts').where({ id: heldPayoutId }).first()).toMatchObject({ status: 'held_for_verification', returned_by_user_id: null });
    expect(await depositOf(owner, second.id)).toMatchObject({ status: 'held_for_verification' });
    expect(await clearingBalance()).toBe(clearingBefore);
    expect(await walletBalance(owner.user.id, 'USDC')).toBe(16_000_000_000n);

    // tier_2 is the top tier: the owner's balance makes room instead (2,000 USDC swapped for USDT).
    const quoted = await request(app).post('/api/crypto/quotes').set(owner.auth).send({ from_currency: 'USDC', to_currency: 'USDT', from_amount: '2000' });
    expect(quoted.status, JSON.stringify(quoted.body)).toBe(201);
    expect((await request(app).post('/api/crypto/conversions').set(owner.auth).set('Idempotency-Key', crypto.randomUUID()).send({ quote_id: quoted.body.data.id })).status).toBe(201);
    await makeDue();
    await app.services.heldPayouts.completeDue({ batchSize: 50 });
    expect(await depositOf(owner, second.id)).toMatchObject({ status: 'completed' });
    const late = await returnHeld(admin, heldPayoutId);
    expect([late.status, late.body.error]).toEqual([409, 'HeldPayoutNotHeld']);
    expect(await creditPostings(second.id)).toBe(1);
  });

  it('a deposit within the caps is credited at once, with no held payout and no `credit`', async () => {
    const owner = await cryptoCaller(app, { USDC: 8_000_000_000n });
    const sent = await send(await addressOf(owner), '8333.33');
    await mine(FINALITY);
    const done = await depositOf(owner, sent.id);
    expect(done.status).toBe('completed');
    expect(done).not.toHaveProperty('credit');
    expect(await knex('held_payouts').where({ subject_id: sent.id })).toEqual([]);
    expect(await walletBalance(owner.user.id, 'USDC')).toBe(16_333_330_000n);
  });
});
