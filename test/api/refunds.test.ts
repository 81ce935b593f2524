import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { setAccountStatus } from '../../src/modules/ledger';
import { buildTestApp, type App } from '../support/app';
import { createApiKey } from '../support/api-keys';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, businessPath, createMember, createOrgAccount, createOrganization, type TestOrgAccount, type TestOrganization } from '../support/factories';
import { balanceOf, expectLedgerInvariants } from '../support/ledger-invariants';
import { moveMoney } from '../support/org-account-postings';

let app: App;
let org: TestOrganization;
let owner: string;
let xof: TestOrgAccount;

beforeAll(async () => {
  app = await buildTestApp();
  org = await createOrganization();
  owner = await accessTokenFor(app, await createMember(org, 'owner'));
  xof = await createOrgAccount(org, { currency: 'XOF' });
});

/** A payment of `amount` XOF that succeeded on a one-off link to the organisation's account. */
async function succeededPayment(amount: number): Promise<string> {
  const link = await request(app).post(`${businessPath(org.id)}/payment-links`).set(bearer(owner)).send({ destination_account_id: xof.id, amount, description: 'Refund test' });
  expect(link.status, JSON.stringify(link.body)).toBe(201);
  const payer = { method: 'card' as const, last4: '4242', decision: { outcome: 'succeeded', delayed: false } } as never;
  const payment = await app.services.payments.start({ linkId: link.body.data.id, nonce: crypto.randomUUID(), amountMinor: BigInt(amount), reference: null, payer });
  const settled = await app.services.payments.settle(payment.id, new Date(Date.now() + 60_000));
  expect(settled.status).toBe('succeeded');
  return payment.id;
}

function refund(paymentId: string, body: Record<string, unknown>, token = owner, key = crypto.randomUUID()) {
  return request(app).post(`${businessPath(org.id)}/payments/${paymentId}/refunds`).set(bearer(token)).set('Idempotency-Key', key).send(body);
}

describe('POST /business/organizations/{orgId}/payments/{paymentId}/refunds', () => {
  it('partial refunds add up to the payment; one more is refused 409 RefundExceedsPayment; the ledger balances', async () => {
    const paymentId = await succeededPayment(10_000);
    const before = await balanceOf(testKnex(), xof.ledgerAccountId);
    const first = await refund(paymentId, { amount: 4000, reason: 'requested_by_customer' });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body.data).toMatchObject({ object: 'refund', payment_id: paymentId, status: 'succeeded', amount_minor: '4000', currency: 'XOF', reason: 'requested_by_customer' });
    const rest = await refund(paymentId, { reason: 'other' });
    expect(rest.status).toBe(201);
    expect(rest.body.data.amount_minor).toBe('6000');
    const more = await refund(paymentId, { amount: 1, reason: 'duplicate' });
    expect(more.status).toBe(409);
    expect(more.body).toMatchObject({ error: 'RefundExceedsPayment', details: { amount_minor: '1', refundable_minor: '0' } });
    expect(await balanceOf(testKnex(), xof.ledgerAccountId)).toBe(before - 10_000n);

    const payment = await request(app).get(`${businessPath(org.id)}/payments/${paymentId}`).set(bearer(owner));
    expect(payment.body.data.amount_refunded_minor).toBe('10000');
    expect(payment.body.data.refunds.map((r: { amount_minor: string }) => r.amount_minor)).toEqual(['6000', '4000']);
    const list = await request(app).get(`${businessPath(org.id)}/payments/${paymentId}/refunds`).set(bearer(owner));
    expect(list.body.data.data).toHaveLength(2);
    const events = await testKnex()('events').where({ subject_id: paymentId, type: 'payment.refunded' }).count({ n: '*' });
    expect(Number(events[0]?.n)).toBe(2);
    await expectLedgerInvariants(testKnex());
  });

  it('concurrent refunds of one payment never add up to more than it', async () => {
    const paymentId = await succeededPayment(9_000);
    const answers = await Promise.all(Array.from({ length: 5 }, () => refund(paymentId, { amount: 3000, reason: 'duplicate' })));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 201, 409, 409]);
    const refunded = await testKnex()('refunds').where({ payment_id: paymentId }).sum({ total: 'amount_minor' });
    expect(BigInt(refunded[0]?.total as string)).toBe(9000n);
    await expectLedgerInvariants(testKnex());
  });

  it('409 InsufficientFunds when the credited account no longer holds the amount; nothing is refunded', async () => {
    const poor = await createOrgAccount(org, { currency: 'XOF' });
    const link = await request(app).post(`${businessPath(org.id)}/payment-links`).set(bearer(owner)).send({ destination_account_id: poor.id, amount: 5000, description: 'Spent' });
    const payment = await app.services.payments.start({ linkId: link.body.data.id, nonce: crypto.randomUUID(), amountMinor: 5000n, reference: null, payer: { method: 'card', last4: '4242', decision: { outcome: 'succeeded', delayed: false } } as never });
    await app.services.payments.settle(payment.id, new Date(Date.now() + 60_000));
    await moveMoney(poor, -4000n);
    const res = await refund(payment.id, { reason: 'requested_by_customer' });
    expect(res.status, JSON.stringify(res.body)).toBe(409);
    expect(res.body.error).toBe('InsufficientFunds');
    expect(await testKnex()('refunds').where({ payment_id: payment.id })).toEqual([]);
    await expectLedgerInvariants(testKnex());
  });

  it('409 PaymentNotRefundable for a payment that did not succeed', async () => {
    const link = await request(app).post(`${businessPath(org.id)}/payment-links`).set(bearer(owner)).send({ destination_account_id: xof.id, amount: 3000, description: 'Declined' });
    const payer = { method: 'card', last4: '0002', decision: { outcome: 'failed:card_declined', delayed: false } } as never;
    const payment = await app.services.payments.start({ linkId: link.body.data.id, nonce: crypto.randomUUID(), amountMinor: 3000n, reference: null, payer });
    expect((await app.services.payments.settle(payment.id, new Date(Date.now() + 60_000))).status).toBe('failed');
    const res = await refund(payment.id, { reason: 'other' });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error: 'PaymentNotRefundable', details: { status: 'failed' } });
  });

  it('a refund the rail declines fails and its money returns to the account', async () => {
    const paymentId = await succeededPayment(5_000);
    const before = await balanceOf(testKnex(), xof.ledgerAccountId);
    const res = await refund(paymentId, { amount: 113, reason: 'other' });
    expect(res.body.data).toMatchObject({ status: 'failed', failure_code: 'refund_declined' });
    expect(await balanceOf(testKnex(), xof.ledgerAccountId)).toBe(before);
    const payment = await request(app).get(`${businessPath(org.id)}/payments/${paymentId}`).set(bearer(owner));
    expect(payment.body.data.amount_refunded_minor).toBe('0');
    expect((await refund(paymentId, { reason: 'other' })).body.data.amount_minor).toBe('5000');
    await expectLedgerInvariants(testKnex());
  });

  it('roles: a cashier may not refund (403); an API key with payments:write may; a frozen account refuses', async () => {
    const paymentId = await succeededPayment(2_000);
    const cashier = await accessTokenFor(app, await createMember(org, 'cashier'));
    expect((await refund(paymentId, { reason: 'other' }, cashier)).status).toBe(403);
    const key = await createApiKey(app, org, ['payments:write']);
    const byKey = await refund(paymentId, { amount: 500, reason: 'other' }, key.secret);
    expect(byKey.status, JSON.stringify(byKey.body)).toBe(201);
    const readOnly = await createApiKey(app, org, ['payments:read']);
    expect((await refund(paymentId, { amount: 500, reason: 'other' }, readOnly.secret)).status).toBe(403);
    await setAccountStatus(testKnex(), xof.ledgerAccountId, 'frozen');
    try {
      const frozen = await refund(paymentId, { amount: 500, reason: 'other' });
      expect(frozen.status).toBe(409);
      expect(frozen.body.error).toBe('AccountFrozen');
    } finally {
      await setAccountStatus(testKnex(), xof.ledgerAccountId, 'active');
    }
  });
});
