import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { EscrowService, escrowStatusOf } from '../../src/modules/escrows';
import { IdempotencyService } from '../../src/modules/idempotency';
import { fundWallet, setAccountStatus, walletIdentity, walletOf } from '../../src/modules/ledger';
import { applyDecision, CLAIMED, readLocked } from '../../src/modules/writes';
import { testKnex } from '../support/database';
import { createUser } from '../support/factories';
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
  const buyer = await createUser();
  const seller = await createUser();
  if (balance > 0n) await withTransaction(knex, (trx) => fundWallet(trx, buyer.id, 'XOF', balance));
  const escrow = await escrows.create(knex, caller(buyer.id), { role: 'buyer', counterpartyIdentifier: seller.email as string, amount: 10_000, currency: 'XOF', description: 'Write path' });
  return { id: escrow.id, buyer: buyer.id, seller: seller.id };
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
    expect(again).toMatchObject({ code: 'DuplicatePosting' });
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
        undefined,
        { responseStatus: 200 },
      )
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'ConcurrentOperation', headers: { 'Retry-After': '1' } });
    expect(await knex('escrows').where({ id }).first('status')).toEqual({ status: 'awaiting_funding' });
    expect(await knex('idempotency_keys').where({ user_id: buyer, key }).first()).toBeUndefined();
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
        undefined,
        { responseStatus: 200 },
      );
    expect((await fund()).status).toBe('funded');
    await expect(fund()).rejects.toMatchObject({ code: 'IdempotencyKeyAlreadyProcessed', details: { resource_type: 'escrow', resource_id: id, status: 'funded' } });
    expect(await knex('idempotency_keys').where({ user_id: buyer, key }).first('status', 'response_status', 'resource_status')).toEqual({ status: 'completed', response_status: 200, resource_status: 'funded' });
    await expectLedgerInvariants(knex);
  });
});
