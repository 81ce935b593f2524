import crypto from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { createCaller, walletBalance, type TestCaller } from '../support/factories';
import { escrowAction, expectEscrowMoneyConsistent, openEscrow } from '../support/escrows';
import { expectLedgerInvariants } from '../support/ledger-invariants';

/**
 * Escrow settlements racing through the HTTP pipeline: refund and resolve on the one write path
 * alone (one request, one transaction, the escrow's row locked by the read that claims the key),
 * accept in the escrows' windows. Whatever arrives together, each escrow settles once, a refusal
 * writes nothing beside the requests that commit, a key sent twice at once has one effect, and
 * no mix of settlements deadlocks; money is conserved.
 */
const knex = testKnex();
let app: App;
let admins: TestCaller[];

beforeAll(async () => {
  app = await buildTestApp();
  admins = [await createCaller(app, {}, { isAdmin: true }), await createCaller(app, {}, { isAdmin: true })];
});

const AMOUNT = 50_000;

async function ok(call: PromiseLike<{ status: number; body: { data: unknown } }>): Promise<void> {
  const res = await call;
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

/** An escrow of AMOUNT XOF between `buyer` and `seller`, brought to `status` through the API. */
async function escrowBetween(buyer: TestCaller, seller: TestCaller, status: 'funded' | 'delivered' | 'disputed'): Promise<string> {
  const { id } = await openEscrow(app, buyer, seller, { amount: AMOUNT });
  await ok(escrowAction(app, buyer, id, 'fund'));
  if (status !== 'funded') await ok(escrowAction(app, seller, id, 'deliver'));
  if (status === 'disputed') await ok(escrowAction(app, buyer, id, 'dispute', { reason: 'Not as described' }));
  return id;
}

async function settlementsOf(id: string): Promise<number> {
  const [row] = await knex('postings').where({ kind: 'escrow.settlement', reference: id }).count<Array<{ n: string }>>({ n: '*' });
  return Number(row?.n);
}

async function statusOf(id: string): Promise<string> {
  return ((await knex('escrows').where({ id }).first('status')) as { status: string }).status;
}

describe('escrow settlements racing on the one write path', () => {
  it('refund and accept of one delivered escrow at once: one settles it, the other is refused by its new state, the money moves once', async () => {
    for (let round = 0; round < 3; round += 1) {
      const [buyer, seller] = [await createCaller(app, { XOF: 1_000_000n }), await createCaller(app)];
      const id = await escrowBetween(buyer, seller, 'delivered');
      const [refund, accept] = await Promise.all([escrowAction(app, seller, id, 'refund'), escrowAction(app, buyer, id, 'accept')]);
      expect([refund.status, accept.status].sort(), JSON.stringify([refund.body, accept.body])).toEqual([200, 409]);
      const [won, lost] = refund.status === 200 ? [refund, accept] : [accept, refund];
      expect(lost.body.error).toBe('InvalidEscrowState');
      expect(await statusOf(id)).toBe(won === refund ? 'refunded' : 'released');
      expect(await settlementsOf(id)).toBe(1);
      // Only the request that settled consumed its key: the refused one left none behind.
      const keys = await knex('idempotency_keys').whereIn('operation', ['refundEscrow', 'acceptEscrow']).andWhere({ resource_id: id }).select('operation', 'status');
      expect(keys).toEqual([{ operation: won === refund ? 'refundEscrow' : 'acceptEscrow', status: 'completed' }]);
      // A refund gives the buyer back everything it paid; an accept pays the seller the amount.
      if (won === refund) expect(await walletBalance(buyer.user.id, 'XOF')).toBe(1_000_000n);
      else expect(await walletBalance(seller.user.id, 'XOF')).toBe(BigInt(AMOUNT));
    }
    await expectEscrowMoneyConsistent(knex, 'XOF');
    await expectLedgerInvariants(knex);
  });

  it('two administrators resolving one dispute at once: one ruling stands, the other is refused, one settlement and one escrow.resolved', async () => {
    const [buyer, seller] = [await createCaller(app, { XOF: 1_000_000n }), await createCaller(app)];
    const id = await escrowBetween(buyer, seller, 'disputed');
    const rulings = await Promise.all([
      escrowAction(app, admins[0] as TestCaller, id, 'resolve', { outcome: 'release' }),
      escrowAction(app, admins[1] as TestCaller, id, 'resolve', { outcome: 'refund' }),
    ]);
    expect(rulings.map((res) => res.status).sort()).toEqual([200, 409]);
    const won = rulings.find((res) => res.status === 200);
    expect(rulings.find((res) => res.status === 409)?.body.error).toBe('InvalidEscrowState');
    expect(await statusOf(id)).toBe(won?.body.data.status);
    expect(await settlementsOf(id)).toBe(1);
    const resolved = await knex('events').where({ subject_type: 'escrow', subject_id: id, type: 'escrow.resolved' }).select('type');
    expect(resolved).toHaveLength(1);
    await expectEscrowMoneyConsistent(knex, 'XOF');
  });

  it('a refund and a ruling of one dispute at once: one settles it, the other is refused, the money moves once', async () => {
    const [buyer, seller] = [await createCaller(app, { XOF: 1_000_000n }), await createCaller(app)];
    const id = await escrowBetween(buyer, seller, 'disputed');
    const [refund, ruling] = await Promise.all([escrowAction(app, seller, id, 'refund'), escrowAction(app, admins[0] as TestCaller, id, 'resolve', { outcome: 'release' })]);
    expect([refund.status, ruling.status].sort()).toEqual([200, 409]);
    expect((refund.status === 409 ? refund : ruling).body.error).toBe('InvalidEscrowState');
    expect(await settlementsOf(id)).toBe(1);
    await expectEscrowMoneyConsistent(knex, 'XOF');
  });

  it('the same refund key sent several times at once: one refund, the others answered 409 (in progress, or the replay naming the escrow)', async () => {
    const [buyer, seller] = [await createCaller(app, { XOF: 1_000_000n }), await createCaller(app)];
    const id = await escrowBetween(buyer, seller, 'funded');
    const key = crypto.randomUUID();
    const sends = await Promise.all(Array.from({ length: 4 }, () => escrowAction(app, seller, id, 'refund', undefined, key)));
    expect(sends.filter((res) => res.status === 200)).toHaveLength(1);
    for (const res of sends.filter((sent) => sent.status !== 200)) {
      expect(res.status).toBe(409);
      expect(['ConcurrentOperation', 'IdempotencyKeyAlreadyProcessed']).toContain(res.body.error);
      if (res.body.error === 'IdempotencyKeyAlreadyProcessed') expect(res.body.details).toMatchObject({ resource_type: 'escrow', resource_id: id, status: 'refunded' });
    }
    expect(await settlementsOf(id)).toBe(1);
    expect(await walletBalance(buyer.user.id, 'XOF')).toBe(1_000_000n);
    expect(await knex('idempotency_keys').where({ key, operation: 'refundEscrow' }).select('status')).toEqual([{ status: 'completed' }]);
  });

  it("many settlements of one buyer's and one seller's escrows at once, refusals among them: none deadlocks, each escrow settles once, a refusal writes nothing, money is conserved", async () => {
    const [buyer, seller] = [await createCaller(app, { XOF: 10_000_000n }), await createCaller(app)];
    const refunded: string[] = [];
    const accepted: string[] = [];
    const ruled: string[] = [];
    for (let n = 0; n < 4; n += 1) refunded.push(await escrowBetween(buyer, seller, n % 2 === 0 ? 'funded' : 'delivered'));
    for (let n = 0; n < 4; n += 1) accepted.push(await escrowBetween(buyer, seller, 'delivered'));
    for (let n = 0; n < 3; n += 1) ruled.push(await escrowBetween(buyer, seller, 'disputed'));
    const buyerBefore = await walletBalance(buyer.user.id, 'XOF');
    const sellerBefore = await walletBalance(seller.user.id, 'XOF');
    const refusedEscrow = refunded[0] as string;
    const eventsBefore = await knex('events').where({ subject_type: 'escrow', subject_id: refusedEscrow }).count<Array<{ n: string }>>({ n: '*' });
    const refusedKey = crypto.randomUUID();
    const calls = [
      ...refunded.map((id) => escrowAction(app, seller, id, 'refund')),
      ...accepted.map((id) => escrowAction(app, buyer, id, 'accept')),
      ...ruled.map((id, n) => escrowAction(app, admins[n % 2] as TestCaller, id, 'resolve', n === 0 ? { outcome: 'split', seller_amount: 20_000 } : { outcome: n === 1 ? 'release' : 'refund' })),
      // Refused beside them: the buyer may not refund (403), and writes nothing.
      escrowAction(app, buyer, refusedEscrow, 'refund', undefined, refusedKey),
    ];
    const answers = await Promise.all(calls);
    const refusal = answers.pop();
    expect(answers.map((res) => res.status), JSON.stringify(answers.filter((res) => res.status !== 200).map((res) => res.body))).toEqual(answers.map(() => 200));
    expect(refusal?.status).toBe(403);
    expect(await knex('idempotency_keys').where({ key: refusedKey })).toEqual([]);
    for (const id of [...refunded, ...accepted, ...ruled]) expect(await settlementsOf(id), id).toBe(1);
    expect(await knex('events').where({ subject_type: 'escrow', subject_id: refusedEscrow }).count<Array<{ n: string }>>({ n: '*' })).toEqual([{ n: String(Number(eventsBefore[0]?.n) + 1) }]);
    // The wallets moved by exactly what the answers' settlements say, each once.
    const settled = answers.map((res) => res.body.data.settlement as { to_seller_minor: string; to_buyer_minor: string });
    const total = (side: 'to_seller_minor' | 'to_buyer_minor') => settled.reduce((sum, settlement) => sum + BigInt(settlement[side]), 0n);
    expect((await walletBalance(buyer.user.id, 'XOF')) - buyerBefore).toBe(total('to_buyer_minor'));
    expect((await walletBalance(seller.user.id, 'XOF')) - sellerBefore).toBe(total('to_seller_minor'));
    // Refunds and the refund ruling give the buyer back all it paid; the split pays the seller part of the amount.
    expect(settled.filter((settlement) => settlement.to_seller_minor === '0')).toHaveLength(refunded.length + 1);
    expect(BigInt((settled[refunded.length + accepted.length] as { to_seller_minor: string }).to_seller_minor)).toBeLessThanOrEqual(20_000n);
    await expectEscrowMoneyConsistent(knex, 'XOF');
    await expectLedgerInvariants(knex);
  });
});
