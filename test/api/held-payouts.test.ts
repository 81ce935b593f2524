import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { openEscrow, escrowAction, expectEscrowMoneyConsistent, platformBalance } from '../support/escrows';
import { activeTontine, contribute, poolBalance } from '../support/tontines';
import { createCaller, type TestCaller } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { SHIPPED_LIMIT_POLICY } from '../support/limits';

/**
 * Payouts held for verification, with the shipped caps: an escrow's release or a tontine's pot
 * that would take its recipient over a tier limit is neither refused nor lost. It stays where
 * it is held, the object shows `payout`, an event says so; the job completes it once the
 * recipient's tier allows, or an administrator returns it to its payer.
 */

let app: App;
const knex = testKnex();

beforeAll(async () => {
  app = await buildTestApp({ limitPolicy: SHIPPED_LIMIT_POLICY });
});

const TIER_0_PER_TRANSACTION = Number(SHIPPED_LIMIT_POLICY.currencies.get('XOF')?.get('tier_0')?.per_transaction);

async function callerAt(tier: 'tier_0' | 'tier_1' | 'tier_2', balances: Record<string, bigint> = {}, user: { isAdmin?: boolean } = {}): Promise<TestCaller> {
  const caller = await createCaller(app, balances, user);
  await knex('users').where({ id: caller.user.id }).update({ tier });
  return caller;
}

async function walletBalance(userId: string, currency = 'XOF'): Promise<string> {
  const row = await knex('ledger_accounts').where({ owner_type: 'user', owner_id: userId, currency, kind: 'wallet' }).first('balance_minor');
  return (row?.balance_minor as string | undefined) ?? '0';
}

async function eventTypes(subjectId: string): Promise<string[]> {
  return (await knex('events').where({ subject_id: subjectId }).orderBy('object_sequence').select('type')).map((row: { type: string }) => row.type);
}

/** Makes every held payout due now (the job tries each a minute after the hold, then backs off). */
async function makeDue(): Promise<void> {
  await knex('held_payouts').where({ status: 'held_for_verification' }).update({ next_attempt_at: knex.raw("now() - interval '1 second'") });
}

/** An escrow of one unit over the seller's tier_0 per-transaction cap, delivered: its release is held when accepted. */
async function deliveredOverTheSellersCap() {
  const buyer = await callerAt('tier_2', { XOF: 1_000_000n });
  const seller = await callerAt('tier_0');
  const escrow = await openEscrow(app, buyer, seller, { amount: TIER_0_PER_TRANSACTION + 1, currency: 'XOF', fee_payer: 'buyer' });
  expect((await escrowAction(app, buyer, escrow.id, 'fund')).status).toBe(200);
  expect((await escrowAction(app, seller, escrow.id, 'deliver')).status).toBe(200);
  return { buyer, seller, escrow };
}

function returnHeld(by: TestCaller, id: string, key = crypto.randomUUID()) {
  return request(app).post(`/api/admin/held-payouts/${id}/return`).set(by.auth).set('Idempotency-Key', key).send({ reason: 'The seller could not complete identity verification.' });
}

describe('an escrow release the seller cannot receive', () => {
  it('is held (accepted, payout held_for_verification, escrow.payout_held), completes by the job once the seller is verified', async () => {
    const { buyer, seller, escrow } = await deliveredOverTheSellersCap();
    const holdingBefore = await platformBalance(knex, 'escrow_holding', 'XOF');
    const accepted = await escrowAction(app, buyer, escrow.id, 'accept');
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    const held = accepted.body.data;
    expect(held.status).toBe('accepted');
    expect(held.payout).toEqual({ id: expect.any(String), status: 'held_for_verification', reason: 'recipient_limit', held_at: expect.any(String), settled_at: null, recipient: 'seller' });
    expect(held.settlement).toBeNull();
    expect(held.allowed_actions).toEqual([]);
    expect(JSON.stringify(held.payout)).not.toMatch(/tier|balance|per_transaction/);
    expect(await walletBalance(seller.user.id)).toBe('0');
    expect(await platformBalance(knex, 'escrow_holding', 'XOF')).toBe(holdingBefore);
    expect((await eventTypes(escrow.id)).at(-1)).toBe('escrow.payout_held');
    const seen = await request(app).get(`/api/escrows/${escrow.id}`).set(seller.auth);
    expect(seen.body.data.payout.status).toBe('held_for_verification');

    // Still tier_0: the job tries, and the payout stays held.
    await makeDue();
    expect(await app.services.heldPayouts.completeDue({ batchSize: 10 })).toBe(0);
    const stillHeld = await knex('held_payouts').where({ id: held.payout.id }).first();
    expect(stillHeld).toMatchObject({ status: 'held_for_verification', attempts: 1 });
    expect(new Date(stillHeld.next_attempt_at).getTime()).toBeGreaterThan(Date.now());

    // The seller verifies (tier_1): the next attempt completes it.
    await knex('users').where({ id: seller.user.id }).update({ tier: 'tier_1' });
    await makeDue();
    expect(await app.services.heldPayouts.completeDue({ batchSize: 10 })).toBe(1);
    const after = (await request(app).get(`/api/escrows/${escrow.id}`).set(seller.auth)).body.data;
    expect(after.status).toBe('released');
    expect(after.payout).toMatchObject({ id: held.payout.id, status: 'completed', settled_at: expect.any(String) });
    expect(after.settlement).toEqual({ to_seller_minor: String(TIER_0_PER_TRANSACTION + 1), to_buyer_minor: '0', fee_minor: after.fee.amount_minor });
    expect(await walletBalance(seller.user.id)).toBe(String(TIER_0_PER_TRANSACTION + 1));
    expect((await eventTypes(escrow.id)).slice(-2)).toEqual(['escrow.payout_held', 'escrow.released']);
    // Nothing is left to do.
    await makeDue();
    expect(await app.services.heldPayouts.completeDue({ batchSize: 10 })).toBe(0);
    await expectLedgerInvariants(knex);
  });

  it('the automatic release is held the same way', async () => {
    const { escrow, seller } = await deliveredOverTheSellersCap();
    await knex('escrows').where({ id: escrow.id }).update({ inspection_ends_at: knex.raw("now() - interval '1 minute'"), auto_release_at: knex.raw("now() - interval '1 minute'") });
    await app.services.escrows.releaseDue({ batchSize: 50 });
    const row = await knex('escrows').where({ id: escrow.id }).first();
    expect(row).toMatchObject({ status: 'accepted', payout_status: 'held_for_verification', auto_release_at: null });
    expect(await walletBalance(seller.user.id)).toBe('0');
    await expectLedgerInvariants(knex);
  });

  it('goes back to the buyer on an administrator decision: refunded, payout returned; nobody else may, nor twice', async () => {
    const { buyer, seller, escrow } = await deliveredOverTheSellersCap();
    const buyerBefore = await walletBalance(buyer.user.id);
    const accepted = await escrowAction(app, buyer, escrow.id, 'accept');
    const heldId = accepted.body.data.payout.id as string;
    const paidIn = BigInt(accepted.body.data.amount_minor) + BigInt(accepted.body.data.fee.buyer_share_minor);

    expect((await returnHeld(buyer, heldId)).body).toMatchObject({ success: false, error: 'InsufficientRole' });
    expect((await returnHeld(seller, heldId)).status).toBe(403);
    const admin = await callerAt('tier_2', {}, { isAdmin: true });
    expect((await returnHeld(admin, crypto.randomUUID())).body).toMatchObject({ success: false, error: 'HeldPayoutNotFound' });

    const returned = await returnHeld(admin, heldId);
    expect(returned.status, JSON.stringify(returned.body)).toBe(200);
    expect(returned.body.data).toMatchObject({
      id: heldId,
      object: 'held_payout',
      subject_type: 'escrow',
      subject_id: escrow.id,
      cycle: null,
      recipient_user_id: seller.user.id,
      amount_minor: String(TIER_0_PER_TRANSACTION + 1),
      currency: 'XOF',
      status: 'returned',
      reason: 'recipient_limit',
      return_reason: 'The seller could not complete identity verification.',
    });
    const after = (await request(app).get(`/api/escrows/${escrow.id}`).set(buyer.auth)).body.data;
    expect(after.status).toBe('refunded');
    expect(after.payout.status).toBe('returned');
    expect(after.settlement).toEqual({ to_seller_minor: '0', to_buyer_minor: paidIn.toString(), fee_minor: '0' });
    expect(await walletBalance(buyer.user.id)).toBe((BigInt(buyerBefore) + paidIn).toString());
    expect(await walletBalance(seller.user.id)).toBe('0');
    expect((await eventTypes(escrow.id)).at(-1)).toBe('escrow.refunded');

    expect((await returnHeld(admin, heldId)).body).toMatchObject({ success: false, error: 'HeldPayoutNotHeld' });
    await makeDue();
    await app.services.heldPayouts.completeDue({ batchSize: 10 });
    expect(await walletBalance(seller.user.id)).toBe('0');
    await expectLedgerInvariants(knex);
  });

  it('an administrator who is a party may not return it (ConflictOfInterest)', async () => {
    const buyer = await callerAt('tier_2', { XOF: 1_000_000n }, { isAdmin: true });
    const seller = await callerAt('tier_0');
    const escrow = await openEscrow(app, buyer, seller, { amount: TIER_0_PER_TRANSACTION + 1, currency: 'XOF', fee_payer: 'buyer' });
    await escrowAction(app, buyer, escrow.id, 'fund');
    const accepted = await escrowAction(app, buyer, escrow.id, 'accept');
    expect(accepted.body.data.status).toBe('accepted');
    const refused = await returnHeld(buyer, accepted.body.data.payout.id);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('ConflictOfInterest');
  });
});

describe("a tontine pot its beneficiary cannot receive", () => {
  /** Two members: the organizer (tier_2) receives cycle 1, the member (tier_0) cycle 2, a pot over their per-transaction cap. */
  async function secondPotHeld() {
    const contribution = 60_000;
    const organizer = await callerAt('tier_2', { XOF: 1_000_000n });
    const member = await callerAt('tier_0', { XOF: 150_000n });
    const tontine = await activeTontine(app, organizer, [member], { contribution_amount: contribution, max_members: 2 });
    for (const who of [organizer, member]) expect((await contribute(app, tontine.id, who)).status).toBe(200);
    expect((await contribute(app, tontine.id, organizer)).status).toBe(200);
    const last = await contribute(app, tontine.id, member);
    expect(last.status, JSON.stringify(last.body)).toBe(200);
    return { organizer, member, tontine, last: last.body.data, pot: 2 * contribution };
  }

  it('is held in the pool (cycle paid_out, payout held_for_verification, tontine.payout_held), then completed by the job once allowed', async () => {
    const { organizer, member, tontine, last, pot } = await secondPotHeld();
    expect(last.status).toBe('completed');
    const cycle = last.cycles.find((c: { number: number }) => c.number === 2);
    expect(cycle).toMatchObject({ status: 'paid_out', paid_out_at: null, payout: { status: 'held_for_verification', reason: 'recipient_limit', settled_at: null } });
    expect(await poolBalance(tontine.id)).toBe(BigInt(pot));
    expect(await walletBalance(member.user.id)).toBe(String(150_000 - 2 * 60_000));
    expect(await eventTypes(tontine.id)).toContain('tontine.payout_held');

    await knex('users').where({ id: member.user.id }).update({ tier: 'tier_1' });
    await makeDue();
    expect(await app.services.heldPayouts.completeDue({ batchSize: 10 })).toBe(1);
    expect(await poolBalance(tontine.id)).toBe(0n);
    expect(await walletBalance(member.user.id)).toBe(String(150_000 - 2 * 60_000 + pot));
    const seen = (await request(app).get(`/api/tontines/${tontine.id}`).set(organizer.auth)).body.data;
    expect(seen.cycles[1]).toMatchObject({ status: 'paid_out', paid_out_at: expect.any(String), payout: { status: 'completed' } });
    expect((await eventTypes(tontine.id)).at(-1)).toBe('tontine.payout_made');
    await expectLedgerInvariants(knex);
  });

  it("goes back to the members who paid it on an administrator's decision", async () => {
    const { organizer, member, tontine, last } = await secondPotHeld();
    const heldId = last.cycles[1].payout.id as string;
    const organizerBefore = BigInt(await walletBalance(organizer.user.id));
    const admin = await callerAt('tier_2', {}, { isAdmin: true });
    const returned = await returnHeld(admin, heldId);
    expect(returned.status, JSON.stringify(returned.body)).toBe(200);
    expect(returned.body.data).toMatchObject({ subject_type: 'tontine', subject_id: tontine.id, cycle: 2, status: 'returned', recipient_user_id: member.user.id });
    expect(await poolBalance(tontine.id)).toBe(0n);
    expect(BigInt(await walletBalance(organizer.user.id))).toBe(organizerBefore + 60_000n);
    expect(await walletBalance(member.user.id)).toBe(String(150_000 - 60_000));
    const types = await eventTypes(tontine.id);
    expect(types.filter((type) => type === 'tontine.contribution_refunded')).toHaveLength(2);
    await expectLedgerInvariants(knex);
  });
});

describe('GET /admin/held-payouts', () => {
  function listHeld(by: TestCaller, query: Record<string, string | number> = {}) {
    return request(app).get('/api/admin/held-payouts').query(query).set(by.auth);
  }

  it('lists every held payout to administrators, the most recently held first, filtered by status, page by page', async () => {
    const first = await deliveredOverTheSellersCap();
    const firstHeld = (await escrowAction(app, first.buyer, first.escrow.id, 'accept')).body.data.payout.id as string;
    const second = await deliveredOverTheSellersCap();
    const secondHeld = (await escrowAction(app, second.buyer, second.escrow.id, 'accept')).body.data.payout.id as string;
    const admin = await callerAt('tier_2', {}, { isAdmin: true });

    // Other files' held payouts may share the database (the embedded back-end): this test's two
    // are next to each other, the second first, wherever the others fall.
    const all = (await listHeld(admin, { limit: 500 })).body.data.data as Array<{ id: string }>;
    const secondAt = all.findIndex((held) => held.id === secondHeld);
    expect(secondAt).toBeGreaterThanOrEqual(0);
    expect(all[secondAt + 1]?.id).toBe(firstHeld);
    const newest = await listHeld(admin, secondAt === 0 ? { limit: 1 } : { limit: 1, starting_after: (all[secondAt - 1] as { id: string }).id });
    expect(newest.status, JSON.stringify(newest.body)).toBe(200);
    expect(newest.body.data).toMatchObject({ object: 'list', has_more: true, next_cursor: secondHeld });
    expect(newest.body.data.data).toEqual([
      expect.objectContaining({ id: secondHeld, object: 'held_payout', subject_type: 'escrow', subject_id: second.escrow.id, status: 'held_for_verification', amount_minor: String(TIER_0_PER_TRANSACTION + 1), settled_at: null }),
    ]);
    const next = await listHeld(admin, { limit: 1, starting_after: secondHeld });
    expect(next.body.data.data.map((held: { id: string }) => held.id)).toEqual([firstHeld]);

    expect((await returnHeld(admin, firstHeld)).status).toBe(200);
    const returned = (await listHeld(admin, { status: 'returned', limit: 500 })).body.data.data as Array<{ id: string; status: string }>;
    expect(returned.every((held) => held.status === 'returned')).toBe(true);
    expect(returned.filter((held) => [firstHeld, secondHeld].includes(held.id)).map((held) => [held.id, held.status])).toEqual([[firstHeld, 'returned']]);
    const waiting = (await listHeld(admin, { status: 'held_for_verification', limit: 500 })).body.data.data as Array<{ id: string; status: string }>;
    expect(waiting.map((held) => held.id)).toContain(secondHeld);
    expect(waiting.map((held) => held.id)).not.toContain(firstHeld);
    expect(new Set(waiting.map((held) => held.status))).toEqual(new Set(['held_for_verification']));
  });

  it('refuses anyone but an administrator (403 InsufficientRole), a foreign cursor and an unknown status (400)', async () => {
    const { buyer, escrow } = await deliveredOverTheSellersCap();
    const heldId = (await escrowAction(app, buyer, escrow.id, 'accept')).body.data.payout.id as string;
    const refused = await listHeld(buyer);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ success: false, error: 'InsufficientRole' });
    const admin = await callerAt('tier_2', {}, { isAdmin: true });
    const foreign = await listHeld(admin, { status: 'returned', starting_after: heldId });
    expect(foreign.status).toBe(400);
    expect(foreign.body).toMatchObject({ success: false, error: 'ValidationError' });
    expect((await listHeld(admin, { starting_after: crypto.randomUUID() })).status).toBe(400);
    expect((await listHeld(admin, { status: 'paid' })).status).toBe(400);
  });
});

describe("a split ruling whose buyer's share the buyer's limits refuse", () => {
  /**
   * A disputed escrow of 300,000 XOF (fee paid by the buyer) whose buyer is back at tier_0 by the
   * ruling: a share over its per-transaction cap (100,000) is refused; `sellerTier` the seller's.
   */
  async function disputedWithALimitedBuyer(sellerTier: 'tier_0' | 'tier_2' = 'tier_2') {
    const buyer = await callerAt('tier_2', { XOF: 1_000_000n });
    const seller = await callerAt('tier_2');
    const escrow = await openEscrow(app, buyer, seller, { amount: 300_000, currency: 'XOF', fee_payer: 'buyer' });
    expect((await escrowAction(app, buyer, escrow.id, 'fund')).status).toBe(200);
    expect((await escrowAction(app, seller, escrow.id, 'deliver')).status).toBe(200);
    expect((await escrowAction(app, buyer, escrow.id, 'dispute', { reason: 'Half of the order is missing.' })).status).toBe(200);
    await knex('users').where({ id: buyer.user.id }).update({ tier: 'tier_0' });
    await knex('users').where({ id: seller.user.id }).update({ tier: sellerTier });
    const admin = await callerAt('tier_2', {}, { isAdmin: true });
    return { buyer, seller, escrow, admin };
  }

  /** The held payout of the escrow, as the database holds it. */
  async function heldRowsOf(escrowId: string) {
    return (await knex('held_payouts').where({ subject_id: escrowId }).orderBy('held_at').select('id', 'recipient_user_id', 'amount_minor', 'status')) as Array<{ id: string; recipient_user_id: string; amount_minor: string; status: string }>;
  }

  it("pays the seller and the fee, holds the buyer's share for the buyer (200, accepted, saying nothing of the buyer's limits); the job completes it to the buyer once allowed", async () => {
    const { buyer, seller, escrow, admin } = await disputedWithALimitedBuyer();
    const buyerBefore = BigInt(await walletBalance(buyer.user.id));
    const holdingBefore = await platformBalance(knex, 'escrow_holding', 'XOF');

    const ruled = await escrowAction(app, admin, escrow.id, 'resolve', { outcome: 'split', seller_amount: 100_000 });
    expect(ruled.status, JSON.stringify(ruled.body)).toBe(200);
    const held = ruled.body.data;
    expect(held.status).toBe('accepted');
    expect(held.resolution).toMatchObject({ outcome: 'split', seller_amount_minor: '100000' });
    expect(held.payout).toEqual({ id: expect.any(String), status: 'held_for_verification', reason: 'recipient_limit', held_at: expect.any(String), settled_at: null, recipient: 'buyer' });
    expect(held.settlement).toBeNull();
    expect(held.allowed_actions).toEqual([]);
    expect(JSON.stringify(ruled.body)).not.toMatch(/tier_0|balance|remaining|per_transaction/);
    const fee = 1_000n; // 1% of the seller's 100,000, paid by the buyer
    const share = 300_000n + 3_000n - 100_000n - fee;
    expect(await walletBalance(seller.user.id)).toBe('100000');
    expect(BigInt(await walletBalance(buyer.user.id))).toBe(buyerBefore);
    expect(await platformBalance(knex, 'escrow_holding', 'XOF')).toBe(holdingBefore - 100_000n - fee);
    expect(await heldRowsOf(escrow.id)).toEqual([{ id: held.payout.id, recipient_user_id: buyer.user.id, amount_minor: share.toString(), status: 'held_for_verification' }]);
    expect((await eventTypes(escrow.id)).at(-1)).toBe('escrow.payout_held');
    await expectEscrowMoneyConsistent(knex, 'XOF');

    // Still tier_0: the job tries, and the share stays held.
    await makeDue();
    expect(await app.services.heldPayouts.completeDue({ batchSize: 10 })).toBe(0);
    expect(await knex('held_payouts').where({ id: held.payout.id }).first()).toMatchObject({ status: 'held_for_verification', attempts: 1 });

    await knex('users').where({ id: buyer.user.id }).update({ tier: 'tier_1' });
    await makeDue();
    expect(await app.services.heldPayouts.completeDue({ batchSize: 10 })).toBe(1);
    const after = (await request(app).get(`/api/escrows/${escrow.id}`).set(seller.auth)).body.data;
    expect(after.status).toBe('released');
    expect(after.payout).toMatchObject({ id: held.payout.id, status: 'completed', settled_at: expect.any(String), recipient: 'buyer' });
    expect(after.settlement).toEqual({ to_seller_minor: '100000', to_buyer_minor: share.toString(), fee_minor: fee.toString() });
    expect(BigInt(await walletBalance(buyer.user.id))).toBe(buyerBefore + share);
    expect(await walletBalance(seller.user.id)).toBe('100000');
    expect(await platformBalance(knex, 'escrow_holding', 'XOF')).toBe(holdingBefore - 303_000n);
    expect((await eventTypes(escrow.id)).slice(-2)).toEqual(['escrow.payout_held', 'escrow.released']);
    await expectEscrowMoneyConsistent(knex, 'XOF');
    await expectLedgerInvariants(knex);
  });

  it("returned by an administrator, the buyer's share is paid to the buyer, whose money it is (not limited): released, payout returned", async () => {
    const { buyer, seller, escrow, admin } = await disputedWithALimitedBuyer();
    const buyerBefore = BigInt(await walletBalance(buyer.user.id));
    const ruled = await escrowAction(app, admin, escrow.id, 'resolve', { outcome: 'split', seller_amount: 100_000 });
    const heldId = ruled.body.data.payout.id as string;
    const share = 300_000n + 3_000n - 100_000n - 1_000n;

    const other = await callerAt('tier_2', {}, { isAdmin: true });
    const returned = await returnHeld(other, heldId);
    expect(returned.status, JSON.stringify(returned.body)).toBe(200);
    expect(returned.body.data).toMatchObject({ id: heldId, subject_id: escrow.id, recipient_user_id: buyer.user.id, amount_minor: share.toString(), status: 'returned' });
    const after = (await request(app).get(`/api/escrows/${escrow.id}`).set(buyer.auth)).body.data;
    expect(after.status).toBe('released');
    expect(after.payout).toMatchObject({ status: 'returned', recipient: 'buyer' });
    expect(after.settlement).toEqual({ to_seller_minor: '100000', to_buyer_minor: share.toString(), fee_minor: '1000' });
    // Still tier_0, and over its per-transaction cap: money returned is not limited.
    expect(BigInt(await walletBalance(buyer.user.id))).toBe(buyerBefore + share);
    expect(await walletBalance(seller.user.id)).toBe('100000');
    expect((await eventTypes(escrow.id)).at(-1)).toBe('escrow.released');
    expect((await returnHeld(other, heldId)).body).toMatchObject({ success: false, error: 'HeldPayoutNotHeld' });
    await expectEscrowMoneyConsistent(knex, 'XOF');
    await expectLedgerInvariants(knex);
  });

  it("whose seller's share the seller's limits refuse too holds the whole settlement for the seller; once the seller may receive, the seller is paid and the buyer's share held, then completed", async () => {
    const { buyer, seller, escrow, admin } = await disputedWithALimitedBuyer('tier_0');
    const buyerBefore = BigInt(await walletBalance(buyer.user.id));
    const holdingBefore = await platformBalance(knex, 'escrow_holding', 'XOF');
    const ruled = await escrowAction(app, admin, escrow.id, 'resolve', { outcome: 'split', seller_amount: 150_000 });
    expect(ruled.status, JSON.stringify(ruled.body)).toBe(200);
    expect(ruled.body.data).toMatchObject({ status: 'accepted', payout: { status: 'held_for_verification', recipient: 'seller' }, settlement: null });
    expect(await walletBalance(seller.user.id)).toBe('0');
    expect(await platformBalance(knex, 'escrow_holding', 'XOF')).toBe(holdingBefore);
    const sellerHeld = ruled.body.data.payout.id as string;
    await expectEscrowMoneyConsistent(knex, 'XOF');

    // The seller verifies, the buyer does not: the seller is paid, the buyer's share is held now.
    await knex('users').where({ id: seller.user.id }).update({ tier: 'tier_1' });
    await makeDue();
    expect(await app.services.heldPayouts.completeDue({ batchSize: 10 })).toBe(0);
    const fee = 1_500n;
    const share = 303_000n - 150_000n - fee;
    const sharing = (await request(app).get(`/api/escrows/${escrow.id}`).set(seller.auth)).body.data;
    expect(sharing).toMatchObject({ status: 'accepted', payout: { status: 'held_for_verification', recipient: 'buyer' }, settlement: null });
    expect(sharing.payout.id).not.toBe(sellerHeld);
    expect(await walletBalance(seller.user.id)).toBe('150000');
    expect(await heldRowsOf(escrow.id)).toEqual([
      { id: sellerHeld, recipient_user_id: seller.user.id, amount_minor: '150000', status: 'completed' },
      { id: sharing.payout.id, recipient_user_id: buyer.user.id, amount_minor: share.toString(), status: 'held_for_verification' },
    ]);
    // The seller's payout is settled: an administrator can no longer return it.
    expect((await returnHeld(admin, sellerHeld)).body).toMatchObject({ success: false, error: 'HeldPayoutNotHeld' });
    await expectEscrowMoneyConsistent(knex, 'XOF');

    await knex('users').where({ id: buyer.user.id }).update({ tier: 'tier_1' });
    await makeDue();
    expect(await app.services.heldPayouts.completeDue({ batchSize: 10 })).toBe(1);
    const after = (await request(app).get(`/api/escrows/${escrow.id}`).set(buyer.auth)).body.data;
    expect(after).toMatchObject({ status: 'released', payout: { id: sharing.payout.id, status: 'completed', recipient: 'buyer' } });
    expect(after.settlement).toEqual({ to_seller_minor: '150000', to_buyer_minor: share.toString(), fee_minor: fee.toString() });
    expect(BigInt(await walletBalance(buyer.user.id))).toBe(buyerBefore + share);
    expect((await eventTypes(escrow.id)).slice(-3)).toEqual(['escrow.payout_held', 'escrow.payout_held', 'escrow.released']);
    await expectEscrowMoneyConsistent(knex, 'XOF');
    await expectLedgerInvariants(knex);
  });

  it('a split the buyer may receive is settled at once, nothing held', async () => {
    const { buyer, seller, escrow, admin } = await disputedWithALimitedBuyer();
    await knex('users').where({ id: buyer.user.id }).update({ tier: 'tier_1' });
    const ruled = await escrowAction(app, admin, escrow.id, 'resolve', { outcome: 'split', seller_amount: 100_000 });
    expect(ruled.status, JSON.stringify(ruled.body)).toBe(200);
    expect(ruled.body.data.status).not.toBe('accepted');
    expect(ruled.body.data.payout ?? null).toBeNull();
    expect(await walletBalance(seller.user.id)).toBe('100000');
    await expectLedgerInvariants(knex);
  });
});
