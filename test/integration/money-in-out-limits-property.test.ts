import crypto from 'node:crypto';
import fc from 'fast-check';
import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MOBILE_MONEY_CALLBACK_SECRET } from '../../src/config';
import { walletOf } from '../../src/modules/ledger';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, businessPath, createCaller, createMember, createOrgAccount, createOrganization, type TestCaller, type TestOrgAccount } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { SHIPPED_LIMIT_POLICY } from '../support/limits';

/**
 * Money in and out within the shipped caps, at random: top-ups whose rail callbacks arrive at
 * once, late (after the other operations), twice, or never (the job asks the rail ten minutes
 * later), transfers between people of different tiers, refunds of an organisation's payments
 * and its payouts. After every run: the ledger balances and no balance is negative
 * (expectLedgerInvariants), every answer is documented (no 5xx), and no cap is exceeded: for
 * each wallet and the organisation's account, its balance, this month's inflow and this day's
 * outflow are within its tier's caps, and no entry moved more than its per-transaction cap.
 */

const knex = testKnex();
const rail = new Webhook(DEFAULT_MOBILE_MONEY_CALLBACK_SECRET);
let app: App;
let clockOffsetMs = 0;

beforeAll(async () => {
  app = await buildTestApp({ limitPolicy: SHIPPED_LIMIT_POLICY, now: () => new Date(Date.now() + clockOffsetMs) });
});

type Tier = 'tier_0' | 'tier_1';
type Delivery = 'now' | 'late' | 'twice' | 'never';

type Step =
  | { kind: 'top_up'; who: number; amount: number; outcome: 'succeeded' | 'failed'; delivery: Delivery }
  | { kind: 'transfer'; from: number; to: number; amount: number }
  | { kind: 'refund'; amount: number }
  | { kind: 'payout'; amount: number };

const PEOPLE = 3;
const person = fc.integer({ min: 0, max: PEOPLE - 1 });
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('top_up' as const), who: person, amount: fc.integer({ min: 1, max: 130_000 }), outcome: fc.constantFrom('succeeded' as const, 'failed' as const), delivery: fc.constantFrom<Delivery>('now', 'late', 'twice', 'never') }),
  fc.record({ kind: fc.constant('transfer' as const), from: person, to: person, amount: fc.integer({ min: 1, max: 120_000 }) }),
  fc.record({ kind: fc.constant('refund' as const), amount: fc.integer({ min: 1, max: 60_000 }) }),
  fc.record({ kind: fc.constant('payout' as const), amount: fc.integer({ min: 1, max: 200_000 }) }),
);

/** A callback as the rail sends it, signed (each delivery a webhook-id of its own). */
function callback(providerReference: string, outcome: 'succeeded' | 'failed') {
  const raw = JSON.stringify(outcome === 'succeeded' ? { provider_reference: providerReference, status: 'succeeded' } : { provider_reference: providerReference, status: 'failed', failure_code: 'declined' });
  const id = `msg_${crypto.randomUUID()}`;
  const at = new Date(Date.now() + clockOffsetMs);
  return request(app)
    .post('/api/rails/mobile-money/callbacks')
    .set('Content-Type', 'application/json')
    .set('webhook-id', id)
    .set('webhook-timestamp', String(Math.floor(at.getTime() / 1000)))
    .set('webhook-signature', rail.sign(id, at, raw))
    .send(raw);
}

interface World {
  people: Array<{ caller: TestCaller; tier: Tier; walletId: string }>;
  org: { id: string; token: string; account: TestOrgAccount; payments: string[] };
}

async function world(tiers: Tier[]): Promise<World> {
  const people = [];
  for (const tier of tiers) {
    const caller = await createCaller(app);
    await knex('users').where({ id: caller.user.id }).update({ tier });
    people.push({ caller, tier, walletId: (await walletOf(knex, caller.user.id, 'XOF')).id });
  }
  const org = await createOrganization();
  await knex('organizations').where({ id: org.id }).update({ verification_status: 'verified', verification_decided_at: new Date() });
  const account = await createOrgAccount(org, { currency: 'XOF' });
  const token = await accessTokenFor(app, await createMember(org, 'owner'));
  const payments: string[] = [];
  for (const amount of [150_000, 90_000]) {
    const link = await request(app).post(`${businessPath(org.id)}/payment-links`).set(bearer(token)).send({ destination_account_id: account.id, amount, description: 'Property run' });
    expect(link.status, JSON.stringify(link.body)).toBe(201);
    const payer = { method: 'card' as const, last4: '4242', decision: { outcome: 'succeeded', delayed: false } } as never;
    const payment = await app.services.payments.start({ linkId: link.body.data.id, nonce: crypto.randomUUID(), amountMinor: BigInt(amount), reference: null, payer });
    expect((await app.services.payments.settle(payment.id, new Date(Date.now() + 60_000))).status).toBe('succeeded');
    payments.push(payment.id);
  }
  return { people, org: { id: org.id, token, account, payments } };
}

/** Every status an operation may answer here: its success or a documented refusal, never a 5xx. */
const ANSWERS: Record<Step['kind'] | 'callback', number[]> = {
  top_up: [202, 409, 422],
  transfer: [200, 201, 409, 422],
  refund: [201, 409, 422],
  payout: [201, 409, 422],
  callback: [200, 404, 409],
};

async function run(w: World, steps: Step[]): Promise<void> {
  const late: Array<() => Promise<void>> = [];
  const never: Array<{ reference: string; outcome: 'succeeded' | 'failed' }> = [];
  const answered = (kind: keyof typeof ANSWERS, res: request.Response) => expect(ANSWERS[kind], `${kind}: ${res.status} ${JSON.stringify(res.body)}`).toContain(res.status);
  for (const s of steps) {
    if (s.kind === 'top_up') {
      const who = w.people[s.who] as World['people'][number];
      const res = await request(app)
        .post(`/api/wallets/${who.walletId}/top-ups`)
        .set(who.caller.auth)
        .set('Idempotency-Key', crypto.randomUUID())
        .send({ amount: s.amount, method: 'mobile_money', provider: 'mtn_momo', msisdn: '+2250500009999' });
      answered('top_up', res);
      if (res.status !== 202) continue;
      const reference = res.body.data.provider_reference as string;
      const deliver = async () => answered('callback', await callback(reference, s.outcome));
      if (s.delivery === 'now') await deliver();
      if (s.delivery === 'twice') await Promise.all([deliver(), deliver()]);
      if (s.delivery === 'late') late.push(deliver);
      if (s.delivery === 'never') never.push({ reference, outcome: s.outcome });
    } else if (s.kind === 'transfer') {
      const from = w.people[s.from] as World['people'][number];
      const to = w.people[s.to] as World['people'][number];
      if (from === to) continue;
      const res = await request(app).post('/api/transfers').set(from.caller.auth).set('Idempotency-Key', crypto.randomUUID()).send({ amount: s.amount, currency: 'XOF', recipientIdentifier: to.caller.user.email });
      answered('transfer', res);
    } else if (s.kind === 'refund') {
      const paymentId = w.org.payments[s.amount % w.org.payments.length] as string;
      const res = await request(app).post(`${businessPath(w.org.id)}/payments/${paymentId}/refunds`).set(bearer(w.org.token)).set('Idempotency-Key', crypto.randomUUID()).send({ amount: s.amount, reason: 'requested_by_customer' });
      answered('refund', res);
    } else {
      const res = await request(app)
        .post(`${businessPath(w.org.id)}/payouts`)
        .set(bearer(w.org.token))
        .set('Idempotency-Key', crypto.randomUUID())
        .send({ account_id: w.org.account.id, amount: s.amount, destination: { type: 'mobile_money', provider: 'orange_money', msisdn: '+2250700009999' } });
      answered('payout', res);
    }
  }
  for (const deliver of late) await deliver();
  // Callbacks that never came: the payer's answer is at the rail, and the job asks it ten minutes on.
  const sandbox = app.services.mobileMoneyRail as unknown as { decide: (reference: string, outcome: { status: 'succeeded' } | { status: 'failed'; failureCode: string }) => void };
  for (const { reference, outcome } of never) sandbox.decide(reference, outcome === 'succeeded' ? { status: 'succeeded' } : { status: 'failed', failureCode: 'declined' });
  clockOffsetMs = 11 * 60_000;
  try {
    await app.services.topUps.checkPending({ batchSize: 1000 });
  } finally {
    clockOffsetMs = 0;
  }
  const pending = await knex('top_ups').whereIn('wallet_id', w.people.map((p) => p.walletId)).andWhere({ status: 'pending' }).count<{ n: string }[]>({ n: '*' });
  expect(pending[0]?.n).toBe('0');
}

/** Every account of the run within the caps of its tier: balance, this month's inflow, this day's outflow, and each entry. */
async function expectWithinCaps(w: World): Promise<void> {
  const caps = SHIPPED_LIMIT_POLICY.currencies.get('XOF');
  const accounts = [...w.people.map((p) => ({ id: p.walletId, tier: p.tier as string })), { id: w.org.account.ledgerAccountId, tier: 'verified' }];
  for (const { id, tier } of accounts) {
    const cap = caps?.get(tier as never);
    if (!cap) throw new Error(`no XOF caps for ${tier}`);
    const row = await knex('ledger_accounts')
      .where({ id })
      .first(
        'balance_minor',
        knex.raw(`CASE WHEN inflow_month = date_trunc('month', now() AT TIME ZONE 'UTC')::date THEN inflow_month_minor ELSE 0 END::text AS inflow`),
        knex.raw(`CASE WHEN outflow_day = (now() AT TIME ZONE 'UTC')::date THEN outflow_day_minor ELSE 0 END::text AS outflow`),
      );
    expect(BigInt(row.balance_minor), `${tier} balance`).toBeLessThanOrEqual(BigInt(cap.balance));
    expect(BigInt(row.inflow), `${tier} monthly inflow`).toBeLessThanOrEqual(BigInt(cap.monthly_inflow));
    expect(BigInt(row.outflow), `${tier} daily outflow`).toBeLessThanOrEqual(BigInt(cap.daily_outflow));
    const largest = await knex('entries').where({ account_id: id }).max<{ m: string | null }[]>({ m: knex.raw('abs(amount_minor)') });
    expect(BigInt(largest[0]?.m ?? 0), `${tier} largest movement`).toBeLessThanOrEqual(BigInt(cap.per_transaction));
  }
}

describe('money in and out within the shipped caps, callbacks late, twice or never', () => {
  it('the ledger balances, no balance is negative and no cap is exceeded after every run', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom<Tier>('tier_0', 'tier_1'), { minLength: PEOPLE, maxLength: PEOPLE }), fc.array(step, { minLength: 4, maxLength: 12 }), async (tiers, steps) => {
        const w = await world(tiers);
        await run(w, steps);
        await expectLedgerInvariants(knex);
        await expectWithinCaps(w);
      }),
      { numRuns: Number(process.env.PROPERTY_RUNS ?? 8), seed: process.env.PROPERTY_SEED ? Number(process.env.PROPERTY_SEED) : undefined },
    );
  });
});
