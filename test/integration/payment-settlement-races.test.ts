import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { EventRepository } from '../../src/modules/events';
import { setAccountStatus } from '../../src/modules/ledger';
import type { Payment } from '../../src/modules/payment-links';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, businessPath, createMember, createOrgAccount, createOrganization, type TestOrgAccount } from '../support/factories';
import { balanceOf, expectLedgerInvariants, postingEntries } from '../support/ledger-invariants';

/**
 * Payment settlements racing: each settlement is one transaction of its own, the payment's row
 * locked first, so several callers settling one payment at once (its timer, the sweep, another
 * instance) settle it once, and settlements of several payments to one destination at once never
 * deadlock; a failed settlement and a destination that cannot receive fail once and move nothing;
 * a settlement that loses its connection runs again on a new one and settles once.
 */
const knex = testKnex();
let app: App;
let owner: string;
let orgId: string;

beforeAll(async () => {
  app = await buildTestApp();
  const org = await createOrganization();
  orgId = org.id;
  owner = await accessTokenFor(app, await createMember(org, 'owner'));
});

/** A Checkout on a new account of the organisation (its own ledger account: its balance is this test's alone). */
async function checkoutOn(): Promise<{ account: TestOrgAccount; linkId: string }> {
  const account = await createOrgAccount({ id: orgId }, { currency: 'XOF' });
  const res = await request(app).post(`${businessPath(orgId)}/checkout`).set(bearer(owner)).send({ destination_account_id: account.id });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { account, linkId: res.body.data.id as string };
}

/** A payment the sandbox keeps pending (a delayed decision): settled only when a caller settles it. */
function delayedPayment(linkId: string, amountMinor: bigint, outcome: 'succeeded' | 'failed:expired' = 'succeeded'): Promise<Payment> {
  return app.services.payments.start({
    linkId,
    nonce: crypto.randomUUID(),
    amountMinor,
    reference: null,
    payer: { method: 'mobile_money', last4: outcome === 'succeeded' ? '0009' : '0008', decision: { outcome, delayed: true } },
  });
}

/** Every caller settles every payment, all at once, as if due a minute from now. */
async function settleAllAtOnce(payments: readonly Payment[], callers: number): Promise<Payment[][]> {
  const due = new Date(Date.now() + 60_000);
  return Promise.all(payments.map((payment) => Promise.all(Array.from({ length: callers }, () => app.services.payments.settle(payment.id, due)))));
}

async function eventsOf(paymentId: string): Promise<string[]> {
  return (await knex('events').where({ subject_type: 'payment', subject_id: paymentId }).select('type')).map((row: { type: string }) => row.type);
}

describe('payment settlements racing', () => {
  it('several callers settling several payments to one destination at once: each settles once, one posting and one event each, the destination credited their sum', async () => {
    const { account, linkId } = await checkoutOn();
    const amounts = [1_000n, 2_500n, 700n, 4_200n, 333n];
    const payments = await Promise.all(amounts.map((amount) => delayedPayment(linkId, amount)));
    expect(payments.map((payment) => payment.status)).toEqual(amounts.map(() => 'pending'));
    const answers = await settleAllAtOnce(payments, 3);
    for (const [index, payment] of payments.entries()) {
      const seen = answers[index] as Payment[];
      // Every caller is answered the payment as settled, naming the one posting.
      expect(seen.map((answer) => answer.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
      expect(new Set(seen.map((answer) => answer.postingId)).size).toBe(1);
      expect(await postingEntries(knex, 'payment_link.payment', payment.id)).toEqual([
        { account: 'external_clearing', owner: null, currency: 'XOF', amount: -(amounts[index] as bigint) },
        { account: 'org_account', owner: orgId, currency: 'XOF', amount: amounts[index] as bigint },
      ]);
      expect(await eventsOf(payment.id)).toEqual(['payment.succeeded']);
    }
    expect(await balanceOf(knex, account.ledgerAccountId)).toBe(amounts.reduce((sum, amount) => sum + amount, 0n));
    await expectLedgerInvariants(knex);
  });

  it('a failed settlement and a destination that can no longer receive, settled by several callers at once: each fails once, nothing moves', async () => {
    const { account, linkId } = await checkoutOn();
    const failed = await delayedPayment(linkId, 800n, 'failed:expired');
    const stranded = await delayedPayment(linkId, 900n);
    await withTransaction(knex, (trx) => setAccountStatus(trx, account.ledgerAccountId, 'frozen'));
    const answers = await settleAllAtOnce([failed, stranded], 3);
    expect((answers[0] as Payment[]).map((answer) => [answer.status, answer.failureReason])).toEqual(Array.from({ length: 3 }, () => ['failed', 'expired']));
    expect((answers[1] as Payment[]).map((answer) => [answer.status, answer.failureReason])).toEqual(Array.from({ length: 3 }, () => ['failed', 'destination_unavailable']));
    for (const payment of [failed, stranded]) {
      expect(await postingEntries(knex, 'payment_link.payment', payment.id)).toEqual([]);
      expect(await eventsOf(payment.id)).toEqual(['payment.failed']);
    }
    expect(await balanceOf(knex, account.ledgerAccountId)).toBe(0n);
  });

  it('a one-off link paid by a payment several callers settle at once: paid once, and the link completed', async () => {
    const account = await createOrgAccount({ id: orgId }, { currency: 'XOF' });
    const link = await request(app).post(`${businessPath(orgId)}/payment-links`).set(bearer(owner)).send({ destination_account_id: account.id, amount: 1500 });
    expect(link.status, JSON.stringify(link.body)).toBe(201);
    const payment = await delayedPayment(link.body.data.id as string, 1_500n);
    const answers = await settleAllAtOnce([payment], 4);
    expect(new Set((answers[0] as Payment[]).map((answer) => `${answer.status} ${answer.postingId}`)).size).toBe(1);
    expect((answers[0] as Payment[])[0]?.status).toBe('succeeded');
    expect(await eventsOf(payment.id)).toEqual(['payment.succeeded']);
    expect(await balanceOf(knex, account.ledgerAccountId)).toBe(1_500n);
    expect(((await knex('payment_links').where({ id: link.body.data.id }).first('status')) as { status: string }).status).toBe('completed');
  });

  it('a settlement whose connection is lost after its posting is run again on a new connection: settled once, one posting, one event', async () => {
    const { account, linkId } = await checkoutOn();
    const payment = await delayedPayment(linkId, 640n);
    const record = EventRepository.prototype.record;
    let lost = 0;
    // The connection lost as the settlement records its event: after its posting and the payment's row.
    const spy = vi.spyOn(EventRepository.prototype, 'record').mockImplementation(async function (this: EventRepository, ...args: Parameters<EventRepository['record']>) {
      if (lost === 0 && args[0].subjectId === payment.id) {
        lost += 1;
        throw Object.assign(new Error('terminating connection due to administrator command (simulated)'), { code: '57P01' });
      }
      return record.apply(this, args);
    });
    let settled: Payment;
    try {
      settled = await app.services.payments.settle(payment.id, new Date(Date.now() + 60_000));
    } finally {
      spy.mockRestore();
    }
    expect({ status: settled.status, lost }).toEqual({ status: 'succeeded', lost: 1 });
    expect(await postingEntries(knex, 'payment_link.payment', payment.id)).toHaveLength(2);
    expect(await eventsOf(payment.id)).toEqual(['payment.succeeded']);
    expect(await balanceOf(knex, account.ledgerAccountId)).toBe(640n);
  });
});
