import crypto from 'node:crypto';
import request from 'supertest';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { setAccountStatus, walletOf } from '../../src/modules/ledger';
import { SandboxPayoutRail } from '../../src/modules/payouts';
import { SandboxRefundRail } from '../../src/modules/refunds';
import { SandboxMobileMoneyRail } from '../../src/modules/top-ups';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, businessPath, createCaller, createMember, createOrgAccount, createOrganization, type TestOrgAccount, type TestOrganization } from '../support/factories';
import { balanceOf, expectLedgerInvariants } from '../support/ledger-invariants';
import { moveMoney } from '../support/org-account-postings';

/**
 * What the rails must be told is recorded with the change of state that calls for it and
 * delivered by the job when the request could not: a process that dies right after its commit
 * (the rail never called) loses nothing, and the job completes it exactly once.
 */

let app: App;
let org: TestOrganization;
let owner: string;
let xof: TestOrgAccount;
const knex = testKnex();

beforeAll(async () => {
  app = await buildTestApp();
  org = await createOrganization();
  await knex('organizations').where({ id: org.id }).update({ verification_status: 'verified', verification_decided_at: new Date() });
  owner = await accessTokenFor(app, await createMember(org, 'owner'));
  xof = await createOrgAccount(org, { currency: 'XOF' });
});

afterEach(() => {
  vi.restoreAllMocks();
});

function instruction(kind: string, subjectId: string) {
  return knex('rail_instructions').where({ kind, subject_id: subjectId }).first();
}

/** Makes every pending instruction due now (the job's first attempt waits a minute after the commit). */
async function makeDue(): Promise<void> {
  await knex('rail_instructions').where({ status: 'pending' }).update({ next_attempt_at: knex.raw("now() - interval '1 second'") });
}

async function succeededPayment(amount: number): Promise<string> {
  const link = await request(app).post(`${businessPath(org.id)}/payment-links`).set(bearer(owner)).send({ destination_account_id: xof.id, amount, description: 'Rail instructions' });
  expect(link.status, JSON.stringify(link.body)).toBe(201);
  const payer = { method: 'card' as const, last4: '4242', decision: { outcome: 'succeeded', delayed: false } } as never;
  const payment = await app.services.payments.start({ linkId: link.body.data.id, nonce: crypto.randomUUID(), amountMinor: BigInt(amount), reference: null, payer });
  await app.services.payments.settle(payment.id, new Date(Date.now() + 60_000));
  return payment.id;
}

describe('a refund whose process dies after its commit', () => {
  it('is submitted to the rail by the job, once, and settled once', async () => {
    const paymentId = await succeededPayment(7_000);
    const railCalls = vi.spyOn(SandboxRefundRail.prototype, 'refund');
    // The request's transaction commits; the process dies before its own attempt.
    const created = await withTransaction(knex, (trx) => app.services.refunds.create(trx, org.id, paymentId, { amount: 3_000, reason: 'requested_by_customer' }, null));
    expect(await knex('refunds').where({ id: created.refund.id }).first('status')).toEqual({ status: 'pending' });
    expect(await instruction('refund.submit', created.refund.id)).toMatchObject({ status: 'pending', attempts: 0 });
    // Not due yet: the job leaves it to the request for a minute.
    expect(await app.services.railInstructions.deliverDue({ batchSize: 100 })).toBe(0);
    expect(railCalls).not.toHaveBeenCalled();

    await makeDue();
    expect(await app.services.railInstructions.deliverDue({ batchSize: 100 })).toBeGreaterThanOrEqual(1);
    expect(railCalls.mock.calls.filter(([call]) => (call as unknown as { refundId: string }).refundId === created.refund.id)).toHaveLength(1);
    expect(await knex('refunds').where({ id: created.refund.id }).first('status')).toEqual({ status: 'succeeded' });
    expect(await instruction('refund.submit', created.refund.id)).toMatchObject({ status: 'delivered', attempts: 1, delivered_at: expect.any(Date) });
    expect(Number((await knex('events').where({ subject_id: created.refund.id, type: 'refund.succeeded' }).count({ n: '*' }))[0]?.n)).toBe(1);

    // Nothing is left: another run calls nobody.
    await makeDue();
    await app.services.railInstructions.deliverDue({ batchSize: 100 });
    expect(railCalls.mock.calls.filter(([call]) => (call as unknown as { refundId: string }).refundId === created.refund.id)).toHaveLength(1);
    await expectLedgerInvariants(knex);
  });

  it('a rail that fails is tried again after a backoff, with the same reference, until it answers', async () => {
    const paymentId = await succeededPayment(5_000);
    const railCalls = vi.spyOn(SandboxRefundRail.prototype, 'refund').mockRejectedValueOnce(new Error('rail unreachable'));
    const res = await request(app).post(`${businessPath(org.id)}/payments/${paymentId}/refunds`).set(bearer(owner)).set('Idempotency-Key', crypto.randomUUID()).send({ reason: 'duplicate' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data.status).toBe('pending');
    const failed = await instruction('refund.submit', res.body.data.id);
    expect(failed).toMatchObject({ status: 'pending', attempts: 1, last_error: 'rail unreachable' });
    expect(new Date(failed.next_attempt_at).getTime()).toBeGreaterThan(Date.now());

    await makeDue();
    await app.services.railInstructions.deliverDue({ batchSize: 100 });
    const calls = railCalls.mock.calls.filter(([call]) => (call as unknown as { refundId: string }).refundId === res.body.data.id);
    expect(calls).toHaveLength(2);
    expect(await knex('refunds').where({ id: res.body.data.id }).first('status')).toEqual({ status: 'succeeded' });
    expect(await instruction('refund.submit', res.body.data.id)).toMatchObject({ status: 'delivered', attempts: 2 });
    await expectLedgerInvariants(knex);
  });
});

describe('a payout whose process dies after its commit', () => {
  it('is paid out by the job, once; one waiting for approval has nothing for the rail yet', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    await moveMoney(account, 300_000n);
    const railCalls = vi.spyOn(SandboxPayoutRail.prototype, 'pay');
    const destination = { type: 'mobile_money', provider: 'orange_money', msisdn: '+2250700009999' } as const;
    const created = await withTransaction(knex, (trx) => app.services.payouts.create(trx, org.id, { account_id: account.id, amount: 100_000, destination }, null));
    expect(created.payout.status).toBe('processing');
    expect(await instruction('payout.submit', created.payout.id)).toMatchObject({ status: 'pending', attempts: 0 });

    await makeDue();
    expect(await app.services.railInstructions.deliverDue({ batchSize: 100 })).toBeGreaterThanOrEqual(1);
    await makeDue();
    await app.services.railInstructions.deliverDue({ batchSize: 100 });
    expect(railCalls.mock.calls.filter(([call]) => (call as unknown as { payoutId: string }).payoutId === created.payout.id)).toHaveLength(1);
    expect(await knex('payouts').where({ id: created.payout.id }).first('status')).toEqual({ status: 'paid' });
    expect(await balanceOf(knex, account.ledgerAccountId)).toBe(200_000n);
    expect(await instruction('payout.submit', created.payout.id)).toMatchObject({ status: 'delivered', attempts: 1 });

    // At the approval threshold it waits: nothing for the rail until it is approved.
    const large = await withTransaction(knex, (trx) => app.services.payouts.create(trx, org.id, { account_id: account.id, amount: 1_000_000, destination }, null)).catch((error: unknown) => error);
    expect(large).toMatchObject({ code: 'InsufficientFunds' });
    await moveMoney(account, 1_000_000n);
    const waiting = await withTransaction(knex, (trx) => app.services.payouts.create(trx, org.id, { account_id: account.id, amount: 1_000_000, destination }, null));
    expect(waiting.payout.status).toBe('pending_approval');
    expect(await instruction('payout.submit', waiting.payout.id)).toBeUndefined();
    await expectLedgerInvariants(knex);
  });
});

describe('a reversed top-up', () => {
  it('is paid back to the payer by the job when the rail could not take it at once', async () => {
    const caller = await createCaller(app);
    const wallet = await walletOf(knex, caller.user.id, 'XOF');
    const giveBack = vi.spyOn(SandboxMobileMoneyRail.prototype, 'giveBack').mockRejectedValueOnce(new Error('rail unreachable'));
    const created = await request(app).post(`/api/wallets/${wallet.id}/top-ups`).set(caller.auth).set('Idempotency-Key', crypto.randomUUID()).send({ amount: 25000, method: 'mobile_money', provider: 'orange_money', msisdn: '+2250700009999' });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    await setAccountStatus(knex, wallet.id, 'frozen');
    const settled = await app.services.topUps.settle(created.body.data.provider_reference, { status: 'succeeded' });
    expect(settled.status).toBe('reversed');
    expect(app.services.mobileMoneyRail.wasGivenBack(created.body.data.provider_reference)).toBe(false);
    expect(await instruction('top_up.give_back', created.body.data.id)).toMatchObject({ status: 'pending', attempts: 1, last_error: 'rail unreachable' });

    await makeDue();
    await app.services.railInstructions.deliverDue({ batchSize: 100 });
    expect(app.services.mobileMoneyRail.wasGivenBack(created.body.data.provider_reference)).toBe(true);
    expect(giveBack.mock.calls.filter(([reference]) => reference === created.body.data.provider_reference)).toHaveLength(2);
    expect(await instruction('top_up.give_back', created.body.data.id)).toMatchObject({ status: 'delivered', attempts: 2 });
    expect(await balanceOf(knex, wallet.id)).toBe(0n);
    await expectLedgerInvariants(knex);
  });
});

describe("a top-up's collection request", () => {
  const input = { amount: 25000, method: 'mobile_money' as const, provider: 'mtn_momo' as const, msisdn: '+2250500001111' };

  function requestsFor(spy: { mock: { calls: unknown[][] } }, providerReference: string): number {
    return spy.mock.calls.filter(([call]) => (call as { providerReference: string }).providerReference === providerReference).length;
  }

  it('reaches the rail by the job, once, when the process dies after the commit; the payer can then approve', async () => {
    const caller = await createCaller(app);
    const wallet = await walletOf(knex, caller.user.id, 'XOF');
    const requestToPay = vi.spyOn(SandboxMobileMoneyRail.prototype, 'requestToPay');
    // The request's transaction commits; the process dies before its own attempt.
    const { topUp } = await withTransaction(knex, (trx) => app.services.topUps.create(trx, caller.user.id, wallet.id, input));
    expect(await instruction('top_up.request', topUp.id)).toMatchObject({ status: 'pending', attempts: 0 });
    expect(await app.services.mobileMoneyRail.statusOf(topUp.providerReference)).toEqual({ status: 'failed', failureCode: 'not_found_at_provider' });
    // Not due yet: the job leaves it to the request for a minute.
    await app.services.railInstructions.deliverDue({ batchSize: 100 });
    expect(requestsFor(requestToPay, topUp.providerReference)).toBe(0);

    await makeDue();
    await app.services.railInstructions.deliverDue({ batchSize: 100 });
    expect(requestsFor(requestToPay, topUp.providerReference)).toBe(1);
    expect(requestToPay.mock.calls.find(([call]) => call.providerReference === topUp.providerReference)?.[0]).toEqual({ providerReference: topUp.providerReference, provider: 'mtn_momo', msisdn: '+2250500001111', currency: 'XOF', amountMinor: 25000n });
    expect(await app.services.mobileMoneyRail.statusOf(topUp.providerReference)).toEqual({ status: 'pending' });
    expect(await instruction('top_up.request', topUp.id)).toMatchObject({ status: 'delivered', attempts: 1 });
    await makeDue();
    await app.services.railInstructions.deliverDue({ batchSize: 100 });
    expect(requestsFor(requestToPay, topUp.providerReference)).toBe(1);

    const approved = await request(app).post(`/api/test-helpers/top-ups/${topUp.id}/approve`);
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);
    expect(await balanceOf(knex, wallet.id)).toBe(25000n);
    await expectLedgerInvariants(knex);
  });

  it('is tried at once after the commit and, when the rail cannot take it, again by the job', async () => {
    const caller = await createCaller(app);
    const wallet = await walletOf(knex, caller.user.id, 'XOF');
    const requestToPay = vi.spyOn(SandboxMobileMoneyRail.prototype, 'requestToPay').mockRejectedValueOnce(new Error('rail unreachable'));
    const created = await request(app).post(`/api/wallets/${wallet.id}/top-ups`).set(caller.auth).set('Idempotency-Key', crypto.randomUUID()).send(input);
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    const reference = created.body.data.provider_reference as string;
    expect(requestsFor(requestToPay, reference)).toBe(1);
    expect(await instruction('top_up.request', created.body.data.id)).toMatchObject({ status: 'pending', attempts: 1, last_error: 'rail unreachable' });

    await makeDue();
    await app.services.railInstructions.deliverDue({ batchSize: 100 });
    expect(requestsFor(requestToPay, reference)).toBe(2);
    expect(await instruction('top_up.request', created.body.data.id)).toMatchObject({ status: 'delivered', attempts: 2 });
    expect(await app.services.mobileMoneyRail.statusOf(reference)).toEqual({ status: 'pending' });
  });

  it('is not sent for a top-up settled before it was delivered', async () => {
    const caller = await createCaller(app);
    const wallet = await walletOf(knex, caller.user.id, 'XOF');
    const requestToPay = vi.spyOn(SandboxMobileMoneyRail.prototype, 'requestToPay');
    const { topUp } = await withTransaction(knex, (trx) => app.services.topUps.create(trx, caller.user.id, wallet.id, input));
    const settled = await app.services.topUps.settle(topUp.providerReference, { status: 'failed', failureCode: 'not_found_at_provider' });
    expect(settled.status).toBe('failed');

    await makeDue();
    await app.services.railInstructions.deliverDue({ batchSize: 100 });
    expect(requestsFor(requestToPay, topUp.providerReference)).toBe(0);
    expect(await instruction('top_up.request', topUp.id)).toMatchObject({ status: 'delivered', attempts: 1 });
    expect(await balanceOf(knex, wallet.id)).toBe(0n);
  });
});
