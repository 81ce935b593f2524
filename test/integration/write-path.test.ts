import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { EscrowService, escrowStatusOf, feeFor, refundSettlement, releaseSettlement, splitSettlement } from '../../src/modules/escrows';
import type { Escrow } from '../../src/modules/escrows/escrow-repository';
import { resolutionPlan } from '../../src/modules/escrows/escrow-settlement';
import { IdempotencyService } from '../../src/modules/idempotency';
import { setAccountStatus, walletIdentity, walletOf } from '../../src/modules/ledger';
import { applyDecision, CLAIMED, readLocked } from '../../src/modules/writes';
import { databaseKind, testKnex } from '../support/database';
import { escrowThroughService } from '../support/escrows';
import { expectLedgerInvariants } from '../support/ledger-invariants';

/**
 * The one write path's guarantees, shown on the database itself: a decision is applied entirely
 * or not at all (a refusal of the ledger, a row that no longer shows what the decision read, a
 * table the path does not write); the read claims the request's key before it locks anything.
 */
const knex = testKnex();
const idempotency = new IdempotencyService(knex, { ttlHours: 24 });
idempotency.registerResourceStatus('escrow', escrowStatusOf);
const escrows = new EscrowService({ knex, feeBps: 100, clock: () => new Date() });
const caller = (id: string) => ({ userId: id, sessionId: '', isAdmin: false });

async function openEscrow(balance: bigint): Promise<{ id: string; buyer: string; seller: string }> {
  const { id, buyer, seller } = await escrowThroughService(escrows, { buyerBalance: balance, input: { description: 'Write path' } });
  return { id, buyer: buyer.id, seller: seller.id };
}

const resource = (id: string) => ({ type: 'escrow', id, status: 'funded', location: `/api/escrows/${id}` });
const transfer = (from: string, to: string, amountMinor: bigint) => ({
  kind: 'test.write_path',
  reference: crypto.randomUUID(),
  entries: [
    { account: walletIdentity(from, 'XOF'), amountMinor: -amountMinor },
    { account: walletIdentity(to, 'XOF'), amountMinor },
  ],
});

describe('a decision applied by write_apply', () => {
  it('refused by the ledger writes nothing: InsufficientFunds with the amounts in the currency', async () => {
    const { id, buyer, seller } = await openEscrow(500n);
    const error = await withTransaction(knex, (trx) =>
      applyDecision(trx, { postings: [transfer(buyer, seller, 10_100n)], changes: [{ table: 'escrows', id, set: { status: 'funded' } }], answer: { resource: resource(id) } }),
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'InsufficientFunds', details: { currency: 'XOF', available: '500', required: '10100' } });
    expect(await knex('escrows').where({ id }).first('status')).toEqual({ status: 'awaiting_funding' });
    await expectLedgerInvariants(knex);
  });

  it('whose row no longer shows what the decision read writes nothing, its posting included', async () => {
    const { id, buyer, seller } = await openEscrow(100_000n);
    const posting = transfer(buyer, seller, 1_000n);
    const error = await withTransaction(knex, (trx) =>
      applyDecision(trx, { postings: [posting], changes: [{ table: 'escrows', id, expect: { status: 'delivered' }, set: { status: 'funded' } }], answer: { resource: resource(id) } }),
    ).catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBe('WRT02');
    expect(await knex('postings').where({ reference: posting.reference }).first()).toBeUndefined();
    expect(await knex('escrows').where({ id }).first('status')).toEqual({ status: 'awaiting_funding' });
  });

  it('refused for a frozen account names it (AccountFrozen, with its owner for the party); money may reach a frozen wallet only when the posting allows it', async () => {
    const { id, buyer, seller } = await openEscrow(100_000n);
    const frozen = await withTransaction(knex, async (trx) => {
      const wallet = await walletOf(trx, seller, 'XOF');
      await setAccountStatus(trx, wallet.id, 'frozen');
      return wallet.id;
    });
    const refused = await withTransaction(knex, (trx) => applyDecision(trx, { postings: [transfer(buyer, seller, 1_000n)], answer: { resource: resource(id) } })).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'AccountFrozen', details: { account_id: frozen }, ownerId: seller });
    const allowed = { ...transfer(buyer, seller, 1_000n), metadata: { escrow_id: id }, allowFrozen: true };
    const [postingId] = await withTransaction(knex, (trx) => applyDecision(trx, { postings: [allowed], answer: { resource: resource(id) } }));
    expect(await knex('postings').where({ id: postingId }).first('kind', 'reference', 'metadata')).toEqual({ kind: 'test.write_path', reference: allowed.reference, metadata: { escrow_id: id } });
    await expectLedgerInvariants(knex);
  });

  it('recording a posting already recorded is 409 DuplicatePosting, and writes nothing', async () => {
    const { id, buyer, seller } = await openEscrow(100_000n);
    const posting = transfer(buyer, seller, 1_000n);
    await withTransaction(knex, (trx) => applyDecision(trx, { postings: [posting], answer: { resource: resource(id) } }));
    const again = await withTransaction(knex, (trx) => applyDecision(trx, { postings: [posting], answer: { resource: resource(id) } })).catch((e: unknown) => e);
    expect(again).toMatchObject({ code: 'DuplicatePosting', message: `The test.write_path posting for ${posting.reference} was already recorded.` });
    expect(Number(((await knex('postings').where({ reference: posting.reference }).count('* as n').first()) as { n: string }).n)).toBe(1);
  });

  it('whose key was taken over meanwhile writes nothing: 409 ConcurrentOperation, as the pipeline answers it', async () => {
    const { id, buyer } = await openEscrow(0n);
    const key = crypto.randomUUID();
    const error = await idempotency
      .perform(
        { userId: buyer, operation: 'cancelEscrow', key, request: { path: { escrowId: id } } },
        async (trx) => {
          await readLocked(trx, `SELECT e.id FROM escrows e WHERE e.id = ? AND ${CLAIMED} FOR UPDATE`, [id]);
          // Another request's take-over: a new claim token on the key's row.
          await trx('idempotency_keys').where({ user_id: buyer, key }).update({ claim_token: crypto.randomUUID() });
          await applyDecision(trx, { changes: [{ table: 'escrows', id, set: { status: 'canceled', canceled_at: new Date().toISOString() } }], answer: { resource: { ...resource(id), status: 'canceled' } } });
          return { result: null, responseStatus: 200, resource: { ...resource(id), status: 'canceled' } };
        },
        { responseStatus: 200 },
      )
      .catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'ConcurrentOperation',
      message: 'A request with this Idempotency-Key is still being processed; retry later with the same key.',
      headers: { 'Retry-After': '1' },
    });
    expect(await knex('escrows').where({ id }).first('status')).toEqual({ status: 'awaiting_funding' });
    expect(await knex('idempotency_keys').where({ user_id: buyer, key }).first()).toBeUndefined();
  });

  it("answers the ids of its postings in the decision's order, and writes them where its changes name them by index", async () => {
    const { id, buyer, seller } = await openEscrow(100_000n);
    const first = transfer(buyer, seller, 1_000n);
    // The second names its accounts by id.
    const [sellerWallet, buyerWallet] = await withTransaction(knex, async (trx) => [(await walletOf(trx, seller, 'XOF')).id, (await walletOf(trx, buyer, 'XOF')).id]);
    const second = {
      kind: 'test.write_path',
      reference: crypto.randomUUID(),
      metadata: { escrow_id: id },
      entries: [
        { account: { id: sellerWallet }, amountMinor: -400n },
        { account: { id: buyerWallet }, amountMinor: 400n },
      ],
    };
    const ids = await withTransaction(knex, (trx) =>
      applyDecision(trx, { postings: [first, second], changes: [{ table: 'escrows', id, expect: { status: 'awaiting_funding' }, set: { status: 'funded' }, postingIds: { funding_posting_id: 1 } }], answer: { resource: resource(id) } }),
    );
    expect(await knex('postings').whereIn('id', ids).select('id', 'reference', 'metadata')).toEqual(
      expect.arrayContaining([
        { id: ids[0], reference: first.reference, metadata: {} },
        { id: ids[1], reference: second.reference, metadata: { escrow_id: id } },
      ]),
    );
    expect(ids).toHaveLength(2);
    expect(await knex('entries').where({ posting_id: ids[1] }).orderBy('amount_minor').select('account_id', 'amount_minor')).toEqual([
      { account_id: sellerWallet, amount_minor: '-400' },
      { account_id: buyerWallet, amount_minor: '400' },
    ]);
    expect(await knex('escrows').where({ id }).first('status', 'funding_posting_id')).toEqual({ status: 'funded', funding_posting_id: ids[1] });
    // A decision without postings answers none.
    expect(await withTransaction(knex, (trx) => applyDecision(trx, { changes: [{ table: 'escrows', id, set: { description: 'Changed' } }], answer: { resource: resource(id) } }))).toEqual([]);
    await expectLedgerInvariants(knex);
  });

  it('completes the key with the status the decision answers, or else the operation\'s own, and the resource it names', async () => {
    const { id, buyer } = await openEscrow(0n);
    const perform = (key: string, status: number | undefined) =>
      idempotency.perform(
        { userId: buyer, operation: 'cancelEscrow', key, request: { path: { escrowId: id } } },
        async (trx) => {
          await readLocked(trx, `SELECT e.id FROM escrows e WHERE e.id = ? AND ${CLAIMED} FOR UPDATE`, [id]);
          await applyDecision(trx, { answer: { resource: resource(id), ...(status ? { status } : {}) } });
          return { result: null, responseStatus: status ?? 200, resource: resource(id) };
        },
        { responseStatus: 200 },
      );
    const [own, answered] = [crypto.randomUUID(), crypto.randomUUID()];
    await perform(own, undefined);
    await perform(answered, 202);
    const columns = ['status', 'response_status', 'resource_type', 'resource_id', 'resource_status', 'resource_location'];
    const completed = { status: 'completed', resource_type: 'escrow', resource_id: id, resource_status: 'funded', resource_location: `/api/escrows/${id}` };
    expect(await knex('idempotency_keys').where({ user_id: buyer, key: own }).first(columns)).toEqual({ ...completed, response_status: 200 });
    expect(await knex('idempotency_keys').where({ user_id: buyer, key: answered }).first(columns)).toEqual({ ...completed, response_status: 202 });
  });

  it('inserts a row from its values and its id, a posting id among them by index', async () => {
    const { id, buyer, seller } = await openEscrow(100_000n);
    const { id: _id, funding_posting_id: _funding, ...copied } = (await knex('escrows').where({ id }).first()) as Record<string, unknown>;
    const copy = crypto.randomUUID();
    const [postingId] = await withTransaction(knex, (trx) =>
      applyDecision(trx, {
        postings: [transfer(buyer, seller, 300n)],
        changes: [{ table: 'escrows', op: 'insert', id: copy, set: { ...copied, description: 'Inserted', status: 'funded' }, postingIds: { funding_posting_id: 0 } }],
        answer: { resource: resource(copy) },
      }),
    );
    expect(await knex('escrows').where({ id: copy }).first('description', 'status', 'funding_posting_id', 'buyer_user_id')).toEqual({ description: 'Inserted', status: 'funded', funding_posting_id: postingId, buyer_user_id: buyer });
    // The same id again is the table's own refusal, and nothing of the decision stays.
    const refused = transfer(buyer, seller, 300n);
    const again = await withTransaction(knex, (trx) =>
      applyDecision(trx, { postings: [refused], changes: [{ table: 'escrows', op: 'insert', id: copy, set: copied }], answer: { resource: resource(copy) } }),
    ).catch((e: unknown) => e);
    expect((again as { code?: string }).code).toBe('23505');
    expect(await knex('postings').where({ reference: refused.reference }).first()).toBeUndefined();
    await expectLedgerInvariants(knex);
  });

  it('refuses a table the path does not write', async () => {
    const { id } = await openEscrow(0n);
    const error = await withTransaction(knex, (trx) => applyDecision(trx, { changes: [{ table: 'users' as 'escrows', id, set: { status: 'disabled' } }], answer: { resource: resource(id) } })).catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBe('WRT09');
  });
});

describe('a locked read', () => {
  it('answers nothing for a row that does not exist, and the row itself otherwise', async () => {
    const { id } = await openEscrow(0n);
    const read = (escrowId: string) => withTransaction(knex, (trx) => readLocked<{ id: string; status: string }>(trx, `SELECT e.id, e.status FROM escrows e WHERE e.id = ? AND ${CLAIMED} FOR UPDATE`, [escrowId]));
    expect(await read(crypto.randomUUID())).toBeUndefined();
    expect(await read(id)).toEqual({ id, status: 'awaiting_funding' });
    // A row some of whose columns are null is still a row.
    const unfunded = await withTransaction(knex, (trx) => readLocked(trx, `SELECT e.id, e.funding_posting_id FROM escrows e WHERE e.id = ? AND ${CLAIMED} FOR UPDATE`, [id]));
    expect(unfunded).toEqual({ id, funding_posting_id: null });
  });

  const readThenApply = (userId: string, id: string, key: string, reads = 1) =>
    idempotency.perform(
      { userId, operation: 'cancelEscrow', key, request: { path: { escrowId: id } } },
      async (trx) => {
        const rows: unknown[] = [];
        for (let n = 0; n < reads; n += 1) rows.push(await readLocked(trx, `SELECT e.id, e.status FROM escrows e WHERE e.id = ? AND ${CLAIMED} FOR UPDATE`, [id]));
        await applyDecision(trx, { answer: { resource: resource(id) } });
        return { result: rows, responseStatus: 200, resource: resource(id) };
      },
      { responseStatus: 200 },
    );

  it("claims the key once per request: a second read in the same request reads without claiming it again", async () => {
    const { id, buyer } = await openEscrow(0n);
    const key = crypto.randomUUID();
    expect(await readThenApply(buyer, id, key, 2)).toEqual([
      { id, status: 'awaiting_funding' },
      { id, status: 'awaiting_funding' },
    ]);
    expect(await knex('idempotency_keys').where({ user_id: buyer, key }).first('status')).toEqual({ status: 'completed' });
  });

  it.runIf(databaseKind() === 'postgres')("refuses at once a key another request's transaction holds right now (409 ConcurrentOperation), even one whose row could be taken over", async () => {
    const { id, buyer } = await openEscrow(0n);
    const key = crypto.randomUUID();
    await readThenApply(buyer, id, key);
    await knex('idempotency_keys').where({ user_id: buyer, key }).update({ created_at: new Date(Date.now() - 2_000), expires_at: new Date(Date.now() - 1_000) });
    // What a parallel request with the key holds: its advisory lock, on another connection.
    await knex.transaction(async (holder) => {
      await holder.raw(`SELECT pg_advisory_xact_lock(hashtextextended(? || ' ' || ? || ' ' || ?, 0))`, [buyer, 'cancelEscrow', key]);
      await expect(readThenApply(buyer, id, key)).rejects.toMatchObject({ code: 'ConcurrentOperation' });
    });
    expect(await readThenApply(buyer, id, key)).toEqual([{ id, status: 'awaiting_funding' }]);
  });

  it("reads after the pipeline's claim when its own claim found the key to take over (expired): the read then runs, and the key is completed again", async () => {
    const { id, buyer } = await openEscrow(0n);
    const key = crypto.randomUUID();
    await readThenApply(buyer, id, key);
    const before = (await knex('idempotency_keys').where({ user_id: buyer, key }).first('id', 'claim_token')) as { id: string; claim_token: string };
    await knex('idempotency_keys').where({ id: before.id }).update({ created_at: new Date(Date.now() - 2_000), expires_at: new Date(Date.now() - 1_000) });
    expect(await readThenApply(buyer, id, key)).toEqual([{ id, status: 'awaiting_funding' }]);
    const after = (await knex('idempotency_keys').where({ user_id: buyer, key }).first('id', 'status', 'claim_token', 'expires_at')) as { id: string; status: string; claim_token: string; expires_at: Date };
    expect(after).toMatchObject({ id: before.id, status: 'completed' });
    expect(after.claim_token).not.toBe(before.claim_token);
    expect(after.expires_at.getTime()).toBeGreaterThan(Date.now());
  });

  it("claims the request's key first: a replay is answered from the key and reads (or locks) nothing", async () => {
    const { id, buyer } = await openEscrow(100_000n);
    const key = crypto.randomUUID();
    const fund = () =>
      idempotency.perform(
        { userId: buyer, operation: 'fundEscrow', key, request: { path: { escrowId: id } } },
        async (trx) => {
          const view = await escrows.act(trx, caller(buyer), id, { action: 'fund' });
          return { result: view, responseStatus: 200, resource: { type: 'escrow', id: view.id, status: view.status, location: `/api/escrows/${view.id}` } };
        },
        { responseStatus: 200 },
      );
    expect((await fund()).status).toBe('funded');
    await expect(fund()).rejects.toMatchObject({ code: 'IdempotencyKeyAlreadyProcessed', details: { resource_type: 'escrow', resource_id: id, status: 'funded' } });
    expect(await knex('idempotency_keys').where({ user_id: buyer, key }).first('status', 'response_status', 'resource_status')).toEqual({ status: 'completed', response_status: 200, resource_status: 'funded' });
    await expectLedgerInvariants(knex);
  });
});

describe("an escrow resolution's plan (decided under the lock, from the request)", () => {
  const fee = feeFor(10_000n, 100, 'buyer');
  const escrow = (currency: string) =>
    ({
      amountMinor: 10_000n,
      currency,
      feeBps: fee.bps,
      feePayer: fee.payer,
      feeMinor: fee.totalMinor,
      feeMinimumMinor: fee.minimumMinor,
      buyerFeeMinor: fee.buyerShareMinor,
      sellerFeeMinor: fee.sellerShareMinor,
    }) as Escrow;
  const plan = (currency: string, command: Parameters<typeof resolutionPlan>[2]) => withTransaction(knex, (trx) => resolutionPlan(trx, escrow(currency), command));
  const refusal = (message: string) => ({ code: 'ValidationError', details: [{ field: 'body.seller_amount', message }] });

  it('releases or refunds everything held, with no seller amount', async () => {
    expect(await plan('XOF', { outcome: 'release' })).toEqual({ plan: releaseSettlement(10_000n, fee), sellerAmountMinor: null });
    expect(await plan('XOF', { outcome: 'refund' })).toEqual({ plan: refundSettlement(10_000n, fee), sellerAmountMinor: null });
  });

  it("splits at the seller's amount, read in the escrow's currency; all of the amount or more is refused", async () => {
    expect(await plan('XOF', { outcome: 'split', sellerAmount: 9_999 })).toEqual({ plan: splitSettlement(10_000n, fee, 9_999n), sellerAmountMinor: 9_999n });
    expect(await plan('EUR', { outcome: 'split', sellerAmount: '40.50' })).toEqual({ plan: splitSettlement(10_000n, fee, 4_050n), sellerAmountMinor: 4_050n });
    const all = 'seller_amount must be less than the escrow amount (use the outcome "release" to pay the seller everything).';
    await expect(plan('XOF', { outcome: 'split', sellerAmount: 10_000 })).rejects.toMatchObject(refusal(all));
    await expect(plan('EUR', { outcome: 'split', sellerAmount: '100.01' })).rejects.toMatchObject(refusal(all));
    // An amount the currency cannot hold is refused on the same field.
    await expect(plan('XOF', { outcome: 'split', sellerAmount: '40.5' })).rejects.toMatchObject({ code: 'ValidationError', details: [{ field: 'body.seller_amount' }] });
  });
});
