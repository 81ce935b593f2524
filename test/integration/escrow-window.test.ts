import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { describe, expect, it, vi } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { EscrowService, escrowStatusOf } from '../../src/modules/escrows';
import { escrowDecider } from '../../src/modules/escrows/escrow-window';
import type { EscrowWithHistory } from '../../src/modules/escrows/escrow-repository';
import { IdempotencyService, requestHash } from '../../src/modules/idempotency';
import { currencies, fundWallet, shardedPlatformAccount, walletOf } from '../../src/modules/ledger';
import { DecisionWindow } from '../../src/modules/writes';
import { testKnex } from '../support/database';
import { createUser, type TestUser } from '../support/factories';
import { statementsSent } from '../support/sent-statements';

/**
 * Escrow fund and accept a window at a time: the window's escrows read in one plain statement,
 * the window applied in one (write_apply_batch), no BEGIN or COMMIT; a decision whose escrow
 * changed before it was applied runs again alone and locked, so racing actions still have
 * exactly one outcome and the money moves once.
 */
const knex = testKnex();
const TRANSACTION_CONTROL = /^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b/i;
const idempotency = new IdempotencyService(knex, { ttlHours: 24 });
idempotency.registerResourceStatus('escrow', escrowStatusOf);
const escrows = new EscrowService({ knex, feeBps: 100, clock: () => new Date() });
const caller = (user: TestUser) => ({ userId: user.id, isAdmin: false });
const keyFor = (user: TestUser, operation: 'fundEscrow' | 'acceptEscrow', escrowId: string, key = crypto.randomUUID()) =>
  idempotency.pendingKey({ userId: user.id, operation, key, requestHash: requestHash({ path: { escrowId } }) }, 200);

async function created(): Promise<{ id: string; buyer: TestUser; seller: TestUser }> {
  const [buyer, seller] = [await createUser(), await createUser()];
  await withTransaction(knex, (trx) => fundWallet(trx, buyer.id, 'XOF', 1_000_000n));
  const escrow = await escrows.create(knex, caller(buyer), { role: 'buyer', counterpartyIdentifier: seller.email as string, amount: 10_000, currency: 'XOF', description: 'Windowed' });
  return { id: escrow.id, buyer, seller };
}

async function delivered(): Promise<{ id: string; buyer: TestUser; seller: TestUser }> {
  const escrow = await created();
  await escrows.actInWindow(keyFor(escrow.buyer, 'fundEscrow', escrow.id), caller(escrow.buyer), escrow.id, 'fund');
  await escrows.act(knex, caller(escrow.seller), escrow.id, { action: 'deliver' });
  return escrow;
}

function statementsOf<T>(work: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  return statementsSent(knex, work);
}

describe('escrow actions in a window', () => {
  it('fund and accept alone in their window are 2 round trips each, transaction control included', async () => {
    const { id, buyer, seller } = await created();
    await currencies.require(knex, 'XOF');
    const fund = await statementsOf(() => escrows.actInWindow(keyFor(buyer, 'fundEscrow', id), caller(buyer), id, 'fund'));
    expect(fund.result.status).toBe('funded');
    expect(fund.statements.filter((sql) => TRANSACTION_CONTROL.test(sql))).toEqual([]);
    expect(fund.statements.filter((sql) => sql.includes('write_apply_batch(')).length).toBe(1);
    expect(fund.statements.length).toBe(2);
    await escrows.act(knex, caller(seller), id, { action: 'deliver' });
    // The accounts the settlement pays exist already: the count is the accept's own.
    await withTransaction(knex, async (trx) => {
      await walletOf(trx, seller.id, 'XOF');
      await shardedPlatformAccount(trx, 'fees', 'XOF', id);
    });
    const accept = await statementsOf(() => escrows.actInWindow(keyFor(buyer, 'acceptEscrow', id), caller(buyer), id, 'accept'));
    expect(accept.result.status).toBe('released');
    expect(accept.result.history.map((entry) => entry.type)).toEqual(['escrow.created', 'escrow.funded', 'escrow.delivered', 'escrow.released']);
    expect(accept.statements.length).toBe(2);
    expect(await escrows.get(caller(buyer), id)).toEqual(accept.result);
    const keys = await knex('idempotency_keys').where({ user_id: buyer.id }).orderBy('operation').select('operation', 'status', 'resource_status');
    expect(keys).toEqual([
      { operation: 'acceptEscrow', status: 'completed', resource_status: 'released' },
      { operation: 'fundEscrow', status: 'completed', resource_status: 'funded' },
    ]);
  });

  it('accepts racing on one escrow, several in one window: one releases it, the others are refused by its new state, the money moves once', async () => {
    const { id, buyer, seller } = await delivered();
    const before = (await walletOf(knex, seller.id, 'XOF')).balanceMinor;
    const outcomes = await Promise.allSettled(Array.from({ length: 6 }, () => escrows.actInWindow(keyFor(buyer, 'acceptEscrow', id), caller(buyer), id, 'accept')));
    const released = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    expect(released).toHaveLength(1);
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') expect((outcome.reason as { code?: string }).code).toBe('InvalidEscrowState');
    }
    expect((await walletOf(knex, seller.id, 'XOF')).balanceMinor - before).toBe(10_000n);
    const events = await knex('events').where({ subject_type: 'escrow', subject_id: id, type: 'escrow.released' }).count<Array<{ n: string }>>({ n: '*' });
    expect(Number(events[0]?.n)).toBe(1);
    // Only the accept that released it consumed its key: a refusal leaves its key free.
    expect(await knex('idempotency_keys').where({ user_id: buyer.id, operation: 'acceptEscrow' }).select('status')).toEqual([{ status: 'completed' }]);
  });

  it('a replayed funding answers 409 naming the escrow, and never funds twice', async () => {
    const { id, buyer } = await created();
    const key = crypto.randomUUID();
    await escrows.actInWindow(keyFor(buyer, 'fundEscrow', id, key), caller(buyer), id, 'fund');
    const replay = escrows.actInWindow(keyFor(buyer, 'fundEscrow', id, key), caller(buyer), id, 'fund');
    await expect(replay).rejects.toMatchObject({ code: 'IdempotencyKeyAlreadyProcessed', details: { resource_type: 'escrow', resource_id: id, status: 'funded' } });
    const fundings = await knex('postings').where({ kind: 'escrow.funding', reference: id }).count<Array<{ n: string }>>({ n: '*' });
    expect(Number(fundings[0]?.n)).toBe(1);
  });

  it('an escrow the caller is no party to answers 404, and its key stays free', async () => {
    const { id } = await created();
    const stranger = await createUser();
    await expect(escrows.actInWindow(keyFor(stranger, 'fundEscrow', id), caller(stranger), id, 'fund')).rejects.toMatchObject({ category: 'not_found' });
    expect(await knex('idempotency_keys').where({ user_id: stranger.id })).toEqual([]);
  });

  it('an escrow id in capitals is the same escrow; one that is no UUID is not found, without a read', async () => {
    const { id, buyer } = await created();
    const funded = await escrows.actInWindow(keyFor(buyer, 'fundEscrow', id.toUpperCase()), caller(buyer), id.toUpperCase(), 'fund');
    expect({ id: funded.id, status: funded.status }).toEqual({ id, status: 'funded' });
    for (const other of ['not-an-escrow', `x${id}`, `${id}x`]) {
      const { result, statements } = await statementsOf(() => escrows.window.runWindow([{ caller: caller(buyer), escrowId: other, action: 'accept', key: keyFor(buyer, 'acceptEscrow', other) }]));
      expect(result.map((answer) => ('error' in answer ? (answer.error as { code?: string }).code : answer))).toEqual(['NotFound']);
      // The window's one statement, write_apply_batch: the key claimed, then released for the refusal.
      expect(statements.length).toBe(1);
    }
    expect(await knex('idempotency_keys').where({ user_id: buyer.id, operation: 'acceptEscrow' })).toEqual([]);
  });

  it('a window whose read fails is said to have failed as a whole, naming escrow actions, and each of its actions runs alone', async () => {
    const { id, buyer } = await created();
    // The window's one read meets a database error.
    const failing = { raw: () => Promise.reject(new Error('the read failed')) } as unknown as Knex;
    const ranAlone = { escrow: { id }, history: [] } as unknown as EscrowWithHistory;
    const decider = escrowDecider(failing, { decide: () => Promise.reject(new Error('not decided')), alone: async () => ranAlone });
    const warn = vi.fn();
    const window = new DecisionWindow(knex, decider, () => new Date(), { warn }, { windowMs: 1, maxItems: 64 });
    expect(await window.submit({ caller: caller(buyer), escrowId: id, action: 'fund', key: keyFor(buyer, 'fundEscrow', id) })).toEqual({ after: ranAlone });
    expect(warn.mock.calls).toEqual([[{ size: 1 }, 'a window of escrow actions failed as a whole: they run again one by one']]);
  });
});
