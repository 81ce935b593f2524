import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { fundWallet, setAccountStatus, walletOf } from '../../src/modules/ledger';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { uniquePhone, createCaller, walletBalance, type TestCaller } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { createEscrow, escrowAction, escrowIn as escrowInStatus, expectEscrowMoneyConsistent, openEscrow, platformBalance } from '../support/escrows';

const knex = testKnex();
let app: App;
/** The services' clock: tests move it forward to end inspection periods. */
let clock = new Date();
const advance = (seconds: number) => {
  clock = new Date(clock.getTime() + seconds * 1000);
};
const THREE_DAYS = 259_200;

beforeAll(async () => {
  app = await buildTestApp({ now: () => clock });
});

/** The shared escrow factory (test/support/escrows.ts) on this file's app. */
const create = (by: TestCaller, body: object, key?: string | null) => createEscrow(app, by, body, key);
const act = (by: TestCaller, id: string, action: string, body?: object, key?: string | null) => escrowAction(app, by, id, action, body, key);
const opened = async (buyer: TestCaller, seller: TestCaller, extra: object = {}): Promise<string> => (await openEscrow(app, buyer, seller, extra)).id;
const escrowIn = (status: 'awaiting_funding' | 'funded' | 'delivered' | 'disputed') => escrowInStatus(app, status);
/** Three escrows of `me` as buyer (oldest first) and one where `me` sells, the first funded; opened one second apart. */
async function listedFor(): Promise<{ me: TestCaller; other: TestCaller; ids: string[] }> {
  const me = await createCaller(app, { XOF: 1_000_000n });
  const other = await createCaller(app, { XOF: 1_000_000n });
  const ids: string[] = [];
  for (let i = 0; i < 3; i += 1) {
    advance(1);
    ids.push(await opened(me, other, { amount: 1000 + i }));
  }
  advance(1);
  const asSeller = await create(other, { role: 'buyer', counterparty_identifier: me.user.email, amount: 5, currency: 'XOF', description: 'y' });
  ids.push(asSeller.body.data.id);
  expect((await act(me, ids[0] as string, 'fund')).status).toBe(200);
  return { me, other, ids };
}

/** How many escrows `who` is the buyer of. */
async function escrowsBoughtBy(who: TestCaller): Promise<Array<{ count: string }>> {
  return knex('escrows').whereIn('buyer_user_id', [who.user.id]).count<{ count: string }[]>('id as count');
}

describe('opening an escrow (POST /escrows)', () => {
  it('creates an escrow awaiting funding, with the fee, the caller\'s allowed actions and its history', async () => {
    const buyer = await createCaller(app);
    const seller = await createCaller(app);
    const res = await create(buyer, {
      role: 'buyer',
      counterparty_identifier: seller.user.email?.toUpperCase(),
      amount: 1250,
      currency: 'XOF',
      description: 'Motorbike',
      reference: 'ORDER-1',
    });
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe(`/api/escrows/${res.body.data.id}`);
    expect(res.body.data).toMatchObject({
      status: 'awaiting_funding',
      role: 'buyer',
      buyer: { user_id: buyer.user.id, identifier: buyer.user.email },
      seller: { user_id: seller.user.id, identifier: seller.user.email },
      amount: 1250,
      amount_minor: '1250',
      currency: 'XOF',
      description: 'Motorbike',
      reference: 'ORDER-1',
      inspection_period_seconds: THREE_DAYS,
      // 1 % of 1,250 XOF is 12.5: half up to 13 XOF, all on the buyer by default.
      fee: { rate_bps: 100, payer: 'buyer', amount: 13, amount_minor: '13', buyer_share_minor: '13', seller_share_minor: '0' },
      allowed_actions: ['fund', 'cancel'],
      funded_at: null,
      released_at: null,
      settlement: null,
      resolution: null,
    });
    expect(res.body.data.history).toEqual([{ type: 'escrow.created', actor_role: 'buyer', actor_user_id: buyer.user.id, occurred_at: clock.toISOString() }]);
    const seen = await request(app).get(`/api/escrows/${res.body.data.id}`).set(seller.auth).expect(200);
    expect(seen.body.data).toMatchObject({ role: 'seller', allowed_actions: ['cancel'] });
  });

  it('the seller opens one with a counterparty named by telephone; a split fee puts the odd minor unit on the buyer', async () => {
    const phone = uniquePhone();
    const buyer = await createCaller(app, {}, { phone });
    const seller = await createCaller(app);
    const res = await create(seller, { role: 'seller', counterparty_identifier: `${phone.slice(0, 4)} ${phone.slice(4)}`, amount: 1250.5, currency: 'EUR', description: 'Logo', fee_payer: 'split' });
    expect(res.status).toBe(201);
    // 1 % of 1,250.50 EUR = 12.505, half up 12.51 EUR: 6.26 for the buyer, 6.25 for the seller.
    expect(res.body.data).toMatchObject({
      role: 'seller',
      buyer: { user_id: buyer.user.id },
      amount_minor: '125050',
      fee: { payer: 'split', amount: 12.51, amount_minor: '1251', buyer_share_minor: '626', seller_share_minor: '625' },
      allowed_actions: ['cancel'],
    });
  });

  it('answers 400 ValidationError for bad amounts, currencies, identifiers, fee payers, inspection periods and roles, and opens nothing', async () => {
    const me = await createCaller(app);
    const other = await createCaller(app);
    const body = { role: 'buyer', counterparty_identifier: other.user.email, amount: 100, currency: 'XOF', description: 'x' };
    const cases: Array<[object, string]> = [
      [{ ...body, amount: 1.5 }, 'body.amount'],
      [{ ...body, currency: 'EUR', amount: 0.001 }, 'body.amount'],
      [{ ...body, currency: 'ZZZ' }, 'body.currency'],
      [{ ...body, counterparty_identifier: 'not an identifier' }, 'body.counterparty_identifier'],
      [{ ...body, fee_payer: 'nobody' }, 'body.fee_payer'],
      [{ ...body, inspection_period_seconds: 60 }, 'body.inspection_period_seconds'],
      [{ ...body, role: 'broker' }, 'body.role'],
    ];
    for (const [bad, field] of cases) {
      const res = await create(me, bad);
      expect({ bad, status: res.status, error: res.body.error }).toEqual({ bad, status: 400, error: 'ValidationError' });
      expect(JSON.stringify(res.body.details)).toContain(field);
    }
    expect(await escrowsBoughtBy(me)).toEqual([{ count: '0' }]);
  });
});

describe('the counterparty is another existing user', () => {
  it('an unknown counterparty is 404 CounterpartyNotFound', async () => {
    const me = await createCaller(app);
    const body = { role: 'buyer', amount: 100, currency: 'XOF', description: 'x' };
    const unknown = await create(me, { ...body, counterparty_identifier: `nobody-${crypto.randomUUID()}@test.example` });
    expect([unknown.status, unknown.body.error]).toEqual([404, 'CounterpartyNotFound']);
    expect(await escrowsBoughtBy(me)).toEqual([{ count: '0' }]);
  });

  it('oneself is 422 SelfEscrow', async () => {
    const me = await createCaller(app);
    const body = { role: 'buyer', amount: 100, currency: 'XOF', description: 'x' };
    const self = await create(me, { ...body, counterparty_identifier: me.user.email });
    expect([self.status, self.body.error]).toEqual([422, 'SelfEscrow']);
    expect(await escrowsBoughtBy(me)).toEqual([{ count: '0' }]);
  });
});

describe('the lifecycle moves the money once', () => {
  it('fund, deliver, accept: the money goes buyer -> holding -> seller and fee account, once, with every timestamp and event', async () => {
    const buyer = await createCaller(app, { XOF: 1_000_000n });
    const seller = await createCaller(app);
    const holdingBefore = await platformBalance(knex, 'escrow_holding', 'XOF');
    const feesBefore = await platformBalance(knex, 'fees', 'XOF');
    const id = await opened(buyer, seller);

    const funded = await act(buyer, id, 'fund');
    expect(funded.status).toBe(200);
    expect(funded.body.data).toMatchObject({ status: 'funded', funded_at: clock.toISOString(), allowed_actions: ['accept', 'dispute'] });
    expect(await walletBalance(buyer.user.id, 'XOF')).toBe(495_000n);
    expect(await platformBalance(knex, 'escrow_holding', 'XOF')).toBe(holdingBefore + 505_000n);

    advance(60);
    const delivered = await act(seller, id, 'deliver', { tracking_reference: 'DHL-1', note: 'Keys in the glovebox' });
    expect(delivered.status).toBe(200);
    const inspectionEnds = new Date(clock.getTime() + THREE_DAYS * 1000).toISOString();
    expect(delivered.body.data).toMatchObject({
      status: 'delivered',
      role: 'seller',
      delivered_at: clock.toISOString(),
      inspection_ends_at: inspectionEnds,
      tracking_reference: 'DHL-1',
      delivery_note: 'Keys in the glovebox',
      allowed_actions: ['refund'],
    });

    advance(60);
    const accepted = await act(buyer, id, 'accept', {});
    expect(accepted.status).toBe(200);
    expect(accepted.body.data).toMatchObject({
      status: 'released',
      accepted_at: clock.toISOString(),
      released_at: clock.toISOString(),
      allowed_actions: [],
      settlement: { to_seller_minor: '500000', to_buyer_minor: '0', fee_minor: '5000' },
    });
    expect(accepted.body.data.history.map((e: { type: string; actor_role: string }) => `${e.type}:${e.actor_role}`)).toEqual([
      'escrow.created:buyer',
      'escrow.funded:buyer',
      'escrow.delivered:seller',
      'escrow.released:buyer',
    ]);
    expect(await walletBalance(seller.user.id, 'XOF')).toBe(500_000n);
    expect(await walletBalance(buyer.user.id, 'XOF')).toBe(495_000n);
    expect(await platformBalance(knex, 'escrow_holding', 'XOF')).toBe(holdingBefore);
    expect(await platformBalance(knex, 'fees', 'XOF')).toBe(feesBefore + 5_000n);
    await expectEscrowMoneyConsistent(knex, 'XOF');
    await expectLedgerInvariants(knex);
  });

  it('a seller-paid fee is deducted from what the seller receives; the buyer funds the amount only', async () => {
    const buyer = await createCaller(app, { EUR: 100_000n });
    const seller = await createCaller(app);
    const res = await create(buyer, { role: 'buyer', counterparty_identifier: seller.user.email, amount: 99.99, currency: 'EUR', description: 'Course', fee_payer: 'seller' });
    const id = res.body.data.id as string;
    // 1 % of 99.99 = 0.9999, half up 1.00 EUR.
    expect(res.body.data.fee).toMatchObject({ amount_minor: '100', buyer_share_minor: '0', seller_share_minor: '100' });
    expect((await act(buyer, id, 'fund')).status).toBe(200);
    expect(await walletBalance(buyer.user.id, 'EUR')).toBe(100_000n - 9_999n);
    const released = await act(buyer, id, 'accept');
    expect(released.body.data.settlement).toEqual({ to_seller_minor: '9899', to_buyer_minor: '0', fee_minor: '100' });
    expect(await walletBalance(seller.user.id, 'EUR')).toBe(9_899n);
  });

  it('fund without enough money: 422 InsufficientFunds, nothing changes, and the key stays free', async () => {
    const buyer = await createCaller(app, { XOF: 505_000n - 1n });
    const seller = await createCaller(app);
    const id = await opened(buyer, seller);
    const key = crypto.randomUUID();
    const refused = await act(buyer, id, 'fund', undefined, key);
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ error: 'InsufficientFunds', details: { currency: 'XOF', available: '504999', required: '505000' } });
    expect(JSON.stringify(refused.body)).not.toContain('account_id');
    expect((await request(app).get(`/api/escrows/${id}`).set(buyer.auth)).body.data.status).toBe('awaiting_funding');
    expect(await walletBalance(buyer.user.id, 'XOF')).toBe(504_999n);
    await withTransaction(knex, (trx) => fundWallet(trx, buyer.user.id, 'XOF', 1n));
    const retried = await act(buyer, id, 'fund', undefined, key);
    expect([retried.status, retried.body.data?.status]).toEqual([200, 'funded']);
    expect(await walletBalance(buyer.user.id, 'XOF')).toBe(0n);
  });

  it('a dispute stops the automatic release, and the buyer can no longer accept (409)', async () => {
    const { id, buyer } = await escrowIn('delivered');
    const disputed = await act(buyer, id, 'dispute', { reason: 'The engine does not start.' });
    expect(disputed.status).toBe(200);
    expect(disputed.body.data).toMatchObject({ status: 'disputed', dispute_reason: 'The engine does not start.', disputed_at: clock.toISOString(), allowed_actions: [] });
    advance(THREE_DAYS + 1);
    // The release sweep runs after the inspection period: the disputed escrow is not among what it releases.
    await app.services.escrows.releaseDue({ batchSize: 1000 });
    expect((await request(app).get(`/api/escrows/${id}`).set(buyer.auth)).body.data.status).toBe('disputed');
    const accept = await act(buyer, id, 'accept');
    expect(accept.status).toBe(409);
    expect(accept.body).toMatchObject({ error: 'InvalidEscrowState', details: { status: 'disputed', action: 'accept', allowed_actions: [] } });
  });

  it('the seller refunds a disputed escrow: everything the buyer paid, fee share included, goes back', async () => {
    const { id, buyer, seller } = await escrowIn('disputed');
    const refunded = await act(seller, id, 'refund');
    expect(refunded.status).toBe(200);
    expect(refunded.body.data).toMatchObject({ status: 'refunded', refunded_at: clock.toISOString(), settlement: { to_seller_minor: '0', to_buyer_minor: '505000', fee_minor: '0' } });
    expect(await walletBalance(buyer.user.id, 'XOF')).toBe(1_000_000n);
    expect(await walletBalance(seller.user.id, 'XOF')).toBe(0n);
  });

  it('either party cancels an escrow awaiting funding; afterwards nothing is allowed', async () => {
    for (const who of ['buyer', 'seller'] as const) {
      const { id, buyer, seller } = await escrowIn('awaiting_funding');
      const res = await act(who === 'buyer' ? buyer : seller, id, 'cancel', who === 'buyer' ? {} : undefined);
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ status: 'canceled', canceled_at: clock.toISOString(), allowed_actions: [] });
      const fund = await act(buyer, id, 'fund');
      expect(fund.body).toMatchObject({ error: 'InvalidEscrowState', details: { status: 'canceled', action: 'fund', allowed_actions: [] } });
    }
  });

  it('the automatic release pays the seller once the inspection period ends without a dispute, once', async () => {
    const { id, seller } = await escrowIn('delivered');
    advance(THREE_DAYS - 1);
    await app.services.escrows.releaseDue({ batchSize: 1000 });
    expect((await request(app).get(`/api/escrows/${id}`).set(seller.auth)).body.data.status).toBe('delivered');
    advance(1);
    expect(await app.services.escrows.releaseDue({ batchSize: 1000 })).toBeGreaterThanOrEqual(1);
    const view = (await request(app).get(`/api/escrows/${id}`).set(seller.auth)).body.data;
    expect(view).toMatchObject({ status: 'released', accepted_at: clock.toISOString(), settlement: { to_seller_minor: '500000', fee_minor: '5000' } });
    expect(view.history.slice(-2)).toEqual([
      { type: 'escrow.delivered', actor_role: 'seller', actor_user_id: seller.user.id, occurred_at: new Date(clock.getTime() - THREE_DAYS * 1000).toISOString() },
      { type: 'escrow.released', actor_role: 'platform', actor_user_id: null, occurred_at: clock.toISOString() },
    ]);
    expect(await walletBalance(seller.user.id, 'XOF')).toBe(500_000n);
    await app.services.escrows.releaseDue({ batchSize: 1000 });
    expect(await walletBalance(seller.user.id, 'XOF')).toBe(500_000n);
  });

  it('a dispute once the inspection period has ended is refused (409), with accept as the one action left', async () => {
    const { id, buyer } = await escrowIn('delivered');
    advance(THREE_DAYS);
    const late = await act(buyer, id, 'dispute', { reason: 'Too late' });
    expect(late.status).toBe(409);
    expect(late.body.details).toEqual({ status: 'delivered', action: 'dispute', allowed_actions: ['accept'] });
  });
});

describe('each action is one event, carrying the escrow after it and the status before', () => {
  interface EscrowEvent {
    type: string;
    sequence: number;
    data: { object: { status: string; history: Array<{ type: string }> } & Record<string, unknown>; previous_status: string | null };
  }
  const eventsOf = async (who: TestCaller, id: string) => ((await request(app).get('/api/events').query({ object_id: id }).set(who.auth)).body.data.data as EscrowEvent[]).reverse();

  it('an accept is one escrow.released; each event\'s object shows the history up to the event itself', async () => {
    const { id, buyer, seller } = await escrowIn('funded');
    expect((await act(buyer, id, 'accept')).status).toBe(200);
    const events = await eventsOf(seller, id);
    expect(events.map((e) => [e.type, e.sequence, e.data.object.status, e.data.previous_status])).toEqual([
      ['escrow.created', 1, 'awaiting_funding', null],
      ['escrow.funded', 2, 'funded', 'awaiting_funding'],
      ['escrow.released', 3, 'released', 'funded'],
    ]);
    expect(events.map((e) => e.data.object.history.map((h) => h.type))).toEqual([
      ['escrow.created'],
      ['escrow.created', 'escrow.funded'],
      ['escrow.created', 'escrow.funded', 'escrow.released'],
    ]);
  });

  it('a resolution is one escrow.resolved whose object shows where the money went', async () => {
    const admin = await createCaller(app, {}, { isAdmin: true });
    const { id, seller } = await escrowIn('disputed');
    expect((await act(admin, id, 'resolve', { outcome: 'refund' })).status).toBe(200);
    const events = await eventsOf(seller, id);
    expect(events.slice(3).map((e) => [e.type, e.data.object.status, e.data.previous_status])).toEqual([
      ['escrow.disputed', 'disputed', 'delivered'],
      ['escrow.resolved', 'refunded', 'disputed'],
    ]);
    expect(events.at(-1)?.data.object).toMatchObject({ resolution: { outcome: 'refund' }, settlement: { to_seller_minor: '0', to_buyer_minor: '505000', fee_minor: '0' } });
  });

  it('the automatic release is one escrow.released by the platform', async () => {
    const { id, seller } = await escrowIn('delivered');
    advance(THREE_DAYS);
    expect(await app.services.escrows.releaseDue({ batchSize: 1000 })).toBeGreaterThanOrEqual(1);
    const events = await eventsOf(seller, id);
    expect(events.slice(2).map((e) => [e.type, e.data.object.status, e.data.previous_status])).toEqual([
      ['escrow.delivered', 'delivered', 'funded'],
      ['escrow.released', 'released', 'delivered'],
    ]);
    expect(events.at(-1)?.data.object.history.at(-1)).toMatchObject({ type: 'escrow.released', actor_role: 'platform', actor_user_id: null });
  });
});

describe('who may take an action: a role that never may gets 403', () => {
  it('a role that may never take an action gets 403 InsufficientRole, in any state', async () => {
    const admin = await createCaller(app, {}, { isAdmin: true });
    const funded = await escrowIn('funded');
    const cases: Array<[TestCaller, string, object | undefined]> = [
      [funded.seller, 'fund', undefined],
      [funded.buyer, 'deliver', undefined],
      [funded.seller, 'accept', undefined],
      [funded.seller, 'dispute', { reason: 'x' }],
      [funded.buyer, 'refund', undefined],
      [funded.buyer, 'resolve', { outcome: 'refund' }],
      [funded.seller, 'resolve', { outcome: 'release' }],
      [admin, 'fund', undefined],
      [admin, 'accept', undefined],
      [admin, 'cancel', undefined],
    ];
    for (const [who, action, body] of cases) {
      const res = await act(who, funded.id, action, body);
      expect({ action, status: res.status, error: res.body.error }).toEqual({ action, status: 403, error: 'InsufficientRole' });
    }
    expect((await request(app).get(`/api/escrows/${funded.id}`).set(funded.buyer.auth)).body.data.status).toBe('funded');
  });
});

describe('which actions a status allows: 409 otherwise', () => {
  it('an action the status does not allow gets 409 InvalidEscrowState naming the status and the allowed actions', async () => {
    const open = await escrowIn('awaiting_funding');
    const notYet = await act(open.buyer, open.id, 'accept');
    expect(notYet.status).toBe(409);
    expect(notYet.body).toMatchObject({ success: false, error: 'InvalidEscrowState', details: { status: 'awaiting_funding', action: 'accept', allowed_actions: ['fund', 'cancel'] } });
    expect(notYet.body.message).toContain('awaiting_funding');
    const deliverEarly = await act(open.seller, open.id, 'deliver');
    expect(deliverEarly.body.details).toEqual({ status: 'awaiting_funding', action: 'deliver', allowed_actions: ['cancel'] });
    const delivered = await escrowIn('delivered');
    for (const [who, action] of [
      [delivered.buyer, 'fund'],
      [delivered.buyer, 'cancel'],
      [delivered.seller, 'deliver'],
    ] as const) {
      const res = await act(who, delivered.id, action);
      expect({ action, status: res.status, error: res.body.error }).toEqual({ action, status: 409, error: 'InvalidEscrowState' });
    }
    const admin = await createCaller(app, {}, { isAdmin: true });
    const resolveEarly = await act(admin, delivered.id, 'resolve', { outcome: 'release' });
    expect(resolveEarly.body).toMatchObject({ error: 'InvalidEscrowState', details: { status: 'delivered', action: 'resolve', allowed_actions: [] } });
  });
});

describe('who sees an escrow: its parties and administrators', () => {
  it('anyone else gets 404 on a read, as for an unknown id', async () => {
    const { id } = await escrowIn('funded');
    const stranger = await createCaller(app, { XOF: 1_000_000n });
    const unknown = crypto.randomUUID();
    for (const path of [`/api/escrows/${id}`, `/api/escrows/${unknown}`]) {
      const res = await request(app).get(path).set(stranger.auth);
      expect([res.status, res.body.error]).toEqual([404, 'NotFound']);
    }
  });

  it('anyone else gets 404 on every action, and nothing changes', async () => {
    const { id, buyer } = await escrowIn('funded');
    const stranger = await createCaller(app, { XOF: 1_000_000n });
    for (const action of ['fund', 'deliver', 'accept', 'refund', 'cancel']) {
      const res = await act(stranger, id, action);
      expect({ action, status: res.status }).toEqual({ action, status: 404 });
    }
    const dispute = await act(stranger, id, 'dispute', { reason: 'x' });
    expect(dispute.status).toBe(404);
    expect((await request(app).get(`/api/escrows/${id}`).set(buyer.auth)).body.data.status).toBe('funded');
  });

  it('an administrator sees it as administrator, with no action of its own', async () => {
    const { id } = await escrowIn('funded');
    const admin = await createCaller(app, {}, { isAdmin: true });
    const seen = await request(app).get(`/api/escrows/${id}`).set(admin.auth).expect(200);
    expect(seen.body.data).toMatchObject({ role: 'administrator', allowed_actions: [] });
  });

  it('a read needs a session (401) and an escrow id (400)', async () => {
    const { id, buyer } = await escrowIn('funded');
    await request(app).get(`/api/escrows/${id}`).expect(401);
    const badId = await request(app).get('/api/escrows/not-a-uuid').set(buyer.auth);
    expect([badId.status, badId.body.error]).toEqual([400, 'ValidationError']);
  });
});

describe('action bodies follow the contract', () => {
  it('a dispute needs its reason and an accept takes no unknown field (400), and nothing changes', async () => {
    const { id, buyer } = await escrowIn('funded');
    const noReason = await act(buyer, id, 'dispute', {});
    expect([noReason.status, noReason.body.error]).toEqual([400, 'ValidationError']);
    const extra = await act(buyer, id, 'accept', { please: true });
    expect([extra.status, extra.body.error]).toEqual([400, 'ValidationError']);
    expect((await request(app).get(`/api/escrows/${id}`).set(buyer.auth)).body.data.status).toBe('funded');
  });
});

describe('Idempotency-Key: required where money moves, replayed, never reused', () => {
  it('POST /escrows without a key is 400 and opens nothing', async () => {
    const me = await createCaller(app);
    const other = await createCaller(app);
    const body = { role: 'buyer', counterparty_identifier: other.user.email, amount: 100, currency: 'XOF', description: 'x' };
    const noKey = await create(me, body, null);
    expect([noKey.status, noKey.body.error]).toEqual([400, 'ValidationError']);
    expect(await escrowsBoughtBy(me)).toEqual([{ count: '0' }]);
  });

  it('accept and refund without a key are 400, and nothing changes', async () => {
    const { id, buyer, seller } = await escrowIn('funded');
    for (const action of ['accept', 'refund']) {
      const res = await act(action === 'accept' ? buyer : seller, id, action, undefined, null);
      expect({ action, status: res.status, error: res.body.error }).toEqual({ action, status: 400, error: 'ValidationError' });
    }
    expect((await request(app).get(`/api/escrows/${id}`).set(buyer.auth)).body.data.status).toBe('funded');
  });

  it('a processed POST /escrows key replays 409 with the escrow and its Location', async () => {
    const buyer = await createCaller(app);
    const seller = await createCaller(app);
    const key = crypto.randomUUID();
    const body = { role: 'buyer', counterparty_identifier: seller.user.email, amount: 700, currency: 'XOF', description: 'Phone' };
    const first = await create(buyer, body, key);
    expect(first.status).toBe(201);
    const replay = await create(buyer, body, key);
    expect(replay.status).toBe(409);
    expect(replay.headers.location).toBe(`/api/escrows/${first.body.data.id}`);
    expect(replay.body).toMatchObject({ error: 'IdempotencyKeyAlreadyProcessed', details: { resource_type: 'escrow', resource_id: first.body.data.id, status: 'awaiting_funding' } });
    expect((await knex('escrows').where({ buyer_user_id: buyer.user.id })).length).toBe(1);
  });

  it('a processed POST /escrows key with another body is 422 IdempotencyKeyReused', async () => {
    const buyer = await createCaller(app);
    const seller = await createCaller(app);
    const key = crypto.randomUUID();
    const body = { role: 'buyer', counterparty_identifier: seller.user.email, amount: 700, currency: 'XOF', description: 'Phone' };
    expect((await create(buyer, body, key)).status).toBe(201);
    const reused = await create(buyer, { ...body, amount: 701 }, key);
    expect([reused.status, reused.body.error]).toEqual([422, 'IdempotencyKeyReused']);
    expect((await knex('escrows').where({ buyer_user_id: buyer.user.id })).length).toBe(1);
  });

  it('fund, accept, refund and resolve replays answer 409 with the escrow and move no money again', async () => {
    const admin = await createCaller(app, {}, { isAdmin: true });
    const a = await escrowIn('awaiting_funding');
    const fundKey = crypto.randomUUID();
    expect((await act(a.buyer, a.id, 'fund', undefined, fundKey)).status).toBe(200);
    const acceptKey = crypto.randomUUID();
    expect((await act(a.buyer, a.id, 'accept', {}, acceptKey)).status).toBe(200);
    const b = await escrowIn('funded');
    const refundKey = crypto.randomUUID();
    expect((await act(b.seller, b.id, 'refund', undefined, refundKey)).status).toBe(200);
    const c = await escrowIn('disputed');
    const resolveKey = crypto.randomUUID();
    expect((await act(admin, c.id, 'resolve', { outcome: 'split', seller_amount: 1000 }, resolveKey)).status).toBe(200);

    const balances = async () => [
      await walletBalance(a.buyer.user.id, 'XOF'),
      await walletBalance(a.seller.user.id, 'XOF'),
      await walletBalance(b.buyer.user.id, 'XOF'),
      await walletBalance(c.buyer.user.id, 'XOF'),
      await walletBalance(c.seller.user.id, 'XOF'),
    ];
    const before = await balances();
    const replays: Array<[TestCaller, string, string, string, object | undefined, string]> = [
      [a.buyer, a.id, 'fund', fundKey, {}, 'released'],
      [a.buyer, a.id, 'accept', acceptKey, undefined, 'released'],
      [b.seller, b.id, 'refund', refundKey, undefined, 'refunded'],
      [admin, c.id, 'resolve', resolveKey, { outcome: 'split', seller_amount: 1000 }, 'released'],
    ];
    for (const [who, id, action, key, body, status] of replays) {
      const res = await act(who, id, action, body, key);
      expect({ action, status: res.status, body: res.body }).toMatchObject({
        action,
        status: 409,
        body: { success: false, error: 'IdempotencyKeyAlreadyProcessed', details: { resource_type: 'escrow', resource_id: id, status } },
      });
      expect(res.headers.location).toBe(`/api/escrows/${id}`);
    }
    const reused = await act(admin, c.id, 'resolve', { outcome: 'split', seller_amount: 2000 }, resolveKey);
    expect([reused.status, reused.body.error]).toEqual([422, 'IdempotencyKeyReused']);
    expect(await balances()).toEqual(before);
    await expectEscrowMoneyConsistent(knex, 'XOF');
  });
});

describe('administrators resolve disputes', () => {
  it('an administrator who is a party never rules on its own escrow (403 ConflictOfInterest), and its allowed_actions agree', async () => {
    // ops@ sells to admin@ (both platform administrators); admin@ funds and disputes.
    const ops = await createCaller(app, {}, { isAdmin: true });
    const buyerAdmin = await createCaller(app, { XOF: 1_000_000n }, { isAdmin: true });
    const created = await create(ops, { role: 'seller', counterparty_identifier: buyerAdmin.user.email, amount: 500_000, currency: 'XOF', description: 'Used delivery motorbike' });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    expect((await act(buyerAdmin, id, 'fund')).status).toBe(200);
    expect((await act(buyerAdmin, id, 'dispute', { reason: 'The engine does not start.' })).status).toBe(200);
    for (const [party, role, allowed] of [
      [ops, 'seller', ['refund']],
      [buyerAdmin, 'buyer', []],
    ] as const) {
      const seen = await request(app).get(`/api/escrows/${id}`).set(party.auth).expect(200);
      expect(seen.body.data).toMatchObject({ role, allowed_actions: allowed });
      const listed = await request(app).get('/api/admin/escrows').query({ status: 'disputed', limit: 500 }).set(party.auth).expect(200);
      expect(listed.body.data.data.find((e: { id: string }) => e.id === id)).toMatchObject({ allowed_actions: allowed });
      for (const outcome of ['release', 'refund']) {
        const refused = await act(party, id, 'resolve', { outcome });
        expect({ status: refused.status, body: refused.body }).toEqual({
          status: 403,
          body: { success: false, error: 'ConflictOfInterest', message: 'You are a party to this escrow: you cannot resolve it. Another platform administrator must.' },
        });
      }
    }
    expect(await walletBalance(ops.user.id, 'XOF')).toBe(0n);
    const seenByOps = await request(app).get(`/api/escrows/${id}`).set(ops.auth).expect(200);
    expect(seenByOps.body.data).toMatchObject({ status: 'disputed', resolution: null });
    // An administrator who is not a party resolves it.
    const judge = await createCaller(app, {}, { isAdmin: true });
    expect((await request(app).get(`/api/escrows/${id}`).set(judge.auth).expect(200)).body.data.allowed_actions).toEqual(['resolve']);
    const resolved = await act(judge, id, 'resolve', { outcome: 'refund' });
    expect(resolved.body.data).toMatchObject({ status: 'refunded', role: 'administrator' });
    await expectLedgerInvariants(knex);
  });

  it('release pays the seller, less the fee, and records the resolution', async () => {
    const admin = await createCaller(app, {}, { isAdmin: true });
    const release = await escrowIn('disputed');
    const released = await act(admin, release.id, 'resolve', { outcome: 'release', note: 'Goods match the listing.' });
    expect(released.status).toBe(200);
    expect(released.body.data).toMatchObject({
      status: 'released',
      role: 'administrator',
      resolved_at: clock.toISOString(),
      released_at: clock.toISOString(),
      resolution: { outcome: 'release', seller_amount_minor: null, note: 'Goods match the listing.', resolved_by_user_id: admin.user.id },
      settlement: { to_seller_minor: '500000', to_buyer_minor: '0', fee_minor: '5000' },
    });
    expect(released.body.data.history.slice(-2).map((e: { type: string; actor_role: string }) => `${e.type}:${e.actor_role}`)).toEqual([
      'escrow.disputed:buyer',
      'escrow.resolved:administrator',
    ]);
    await expectEscrowMoneyConsistent(knex, 'XOF');
    await expectLedgerInvariants(knex);
  });

  it('refund gives the buyer back everything it paid', async () => {
    const admin = await createCaller(app, {}, { isAdmin: true });
    const refund = await escrowIn('disputed');
    const refunded = await act(admin, refund.id, 'resolve', { outcome: 'refund' });
    expect(refunded.body.data).toMatchObject({ status: 'refunded', resolution: { outcome: 'refund' }, settlement: { to_seller_minor: '0', to_buyer_minor: '505000', fee_minor: '0' } });
    expect(await walletBalance(refund.buyer.user.id, 'XOF')).toBe(1_000_000n);
    await expectEscrowMoneyConsistent(knex, 'XOF');
    await expectLedgerInvariants(knex);
  });

  it('split pays the seller its amount, the fee on it, and the rest back to the buyer', async () => {
    const admin = await createCaller(app, {}, { isAdmin: true });
    const split = await escrowIn('disputed');
    const splitted = await act(admin, split.id, 'resolve', { outcome: 'split', seller_amount: 300_000 });
    // The fee on the seller's 300,000 is 3,000 (buyer pays it); the buyer gets 505,000 - 300,000 - 3,000 back.
    expect(splitted.body.data).toMatchObject({
      status: 'released',
      resolution: { outcome: 'split', seller_amount_minor: '300000' },
      settlement: { to_seller_minor: '300000', to_buyer_minor: '202000', fee_minor: '3000' },
    });
    expect(await walletBalance(split.seller.user.id, 'XOF')).toBe(300_000n);
    expect(await walletBalance(split.buyer.user.id, 'XOF')).toBe(1_000_000n - 505_000n + 202_000n);
    await expectEscrowMoneyConsistent(knex, 'XOF');
    await expectLedgerInvariants(knex);
  });

  it('a split that meets a frozen wallet names that party, moves nothing and leaves the dispute open', async () => {
    const admin = await createCaller(app, {}, { isAdmin: true });
    for (const party of ['buyer', 'seller'] as const) {
      const disputed = await escrowIn('disputed');
      const owner = party === 'buyer' ? disputed.buyer : disputed.seller;
      const wallet = await withTransaction(knex, (trx) => walletOf(trx, owner.user.id, 'XOF'));
      await setAccountStatus(knex, wallet.id, 'frozen');
      const before = { buyer: await walletBalance(disputed.buyer.user.id, 'XOF'), seller: await walletBalance(disputed.seller.user.id, 'XOF') };
      const res = await act(admin, disputed.id, 'resolve', { outcome: 'split', seller_amount: 300_000 });
      expect({ status: res.status, error: res.body.error, details: res.body.details }).toEqual({ status: 422, error: 'WalletFrozen', details: { party } });
      expect({ buyer: await walletBalance(disputed.buyer.user.id, 'XOF'), seller: await walletBalance(disputed.seller.user.id, 'XOF') }).toEqual(before);
      expect((await request(app).get(`/api/escrows/${disputed.id}`).set(disputed.buyer.auth)).body.data.status).toBe('disputed');
    }
    await expectLedgerInvariants(knex);
  });

  it('refuses a split without a seller amount, with all or more of the amount, or finer than the currency', async () => {
    const admin = await createCaller(app, {}, { isAdmin: true });
    const { id, buyer } = await escrowIn('disputed');
    for (const body of [{ outcome: 'split' }, { outcome: 'split', seller_amount: 500_000 }, { outcome: 'split', seller_amount: 0.5 }, { outcome: 'refund', seller_amount: 10 }]) {
      const res = await act(admin, id, 'resolve', body);
      expect({ body, status: res.status, error: res.body.error }).toEqual({ body, status: 400, error: 'ValidationError' });
    }
    expect((await request(app).get(`/api/escrows/${id}`).set(buyer.auth)).body.data.status).toBe('disputed');
  });

  it('GET /admin/escrows lists every escrow for administrators only, filtered by status', async () => {
    const admin = await createCaller(app, {}, { isAdmin: true });
    const disputed = await escrowIn('disputed');
    const page = await request(app).get('/api/admin/escrows?status=disputed&limit=500').set(admin.auth).expect(200);
    expect(page.body.data.data.every((e: { status: string }) => e.status === 'disputed')).toBe(true);
    expect(page.body.data.data.find((e: { id: string }) => e.id === disputed.id)).toMatchObject({ role: 'administrator', allowed_actions: ['resolve'] });
    const refused = await request(app).get('/api/admin/escrows').set(disputed.buyer.auth);
    expect([refused.status, refused.body.error]).toEqual([403, 'InsufficientRole']);
  });
});

describe('GET /escrows', () => {
  it('lists the caller\'s escrows as buyer or seller, newest first, filtered by status and role', async () => {
    const { me, ids } = await listedFor();
    const all = await request(app).get('/api/escrows').set(me.auth).expect(200);
    expect(all.body.data.data.map((e: { id: string }) => e.id)).toEqual([...ids].reverse());
    const selling = await request(app).get('/api/escrows?role=seller').set(me.auth).expect(200);
    expect(selling.body.data.data.map((e: { id: string; role: string }) => [e.id, e.role])).toEqual([[ids[3], 'seller']]);
    const funded = await request(app).get('/api/escrows?status=funded&role=buyer').set(me.auth).expect(200);
    expect(funded.body.data.data.map((e: { id: string }) => e.id)).toEqual([ids[0]]);
  });

  it('pages with next_cursor and starting_after', async () => {
    const { me, ids } = await listedFor();
    const first = await request(app).get('/api/escrows?limit=2').set(me.auth).expect(200);
    expect(first.body.data).toMatchObject({ object: 'list', has_more: true, next_cursor: ids[2] });
    const second = await request(app).get(`/api/escrows?limit=2&starting_after=${first.body.data.next_cursor}`).set(me.auth).expect(200);
    expect(second.body.data.data.map((e: { id: string }) => e.id)).toEqual([ids[1], ids[0]]);
    expect(second.body.data).toMatchObject({ has_more: false, next_cursor: null });
  });

  it('a stranger lists none, and another caller\'s escrow is no cursor (400)', async () => {
    const { ids } = await listedFor();
    const stranger = await createCaller(app);
    expect((await request(app).get('/api/escrows').set(stranger.auth).expect(200)).body.data.data).toEqual([]);
    const foreignCursor = await request(app).get(`/api/escrows?starting_after=${ids[0]}`).set(stranger.auth);
    expect([foreignCursor.status, foreignCursor.body.error]).toEqual([400, 'ValidationError']);
  });

  it('an unknown status filter is 400', async () => {
    const me = await createCaller(app);
    const badStatus = await request(app).get('/api/escrows?status=lost').set(me.auth);
    expect(badStatus.status).toBe(400);
  });
});
