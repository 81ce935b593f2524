import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { EscrowService, escrowStatusOf } from '../../src/modules/escrows';
import { IdempotencyService } from '../../src/modules/idempotency';
import { currencies, shardedPlatformAccount, walletOf } from '../../src/modules/ledger';
import { LimitsService } from '../../src/modules/limits';
import { CONTRIBUTION_RESOURCE, contributionStatusOf, TontineService, type TontineView } from '../../src/modules/tontines';
import { SandboxRail, TransferService } from '../../src/modules/transfers';
import { testKnex } from '../support/database';
import { transferClaim } from '../support/idempotency';
import { escrowThroughService } from '../support/escrows';
import { createUser, fundedUser, type TestUser } from '../support/factories';
import { SHIPPED_LIMIT_POLICY, UNBOUNDED_LIMIT_POLICY } from '../support/limits';
import { tontineThroughService } from '../support/tontines';

/**
 * Round trips of the busiest use cases, counted as the statements knex
 * sends (its `query` events, prepared and raw statements included) while the use case runs,
 * its BEGIN and COMMIT aside. Everything the use case needs is counted: the lock, the checks,
 * the posting, the event (and the snapshot it takes before COMMIT) and the response.
 */
const knex = testKnex();
// A tontine contribution on the one write path, the cycle's last included (its payout, the next
// cycle opened or the tontine completed, a random tontine's draw): the read that claims the key
// and locks the tontine (its state in the same statement), and the apply.
const CONTRIBUTION_STATEMENTS = 2;
// Escrow accept on the one write path: the read that claims the key and locks the escrow (its
// history and holding account in the same statement), and the apply (the posting, the row, the
// one event, which carries the escrow built in memory, and the key's completion).
const ESCROW_ACCEPT_LIMIT = 2;
const ACCEPT_EVENTS = ['escrow.released'];
// Measured on both back-ends with fresh users (a seller wallet or a fee shard used for the first
// time costs a second statement: its insert). Before the one-event change, with the application's
// escrow snapshot loader registered (as in production): create 8, fund 11, deliver 7, dispute 7,
// resolve 19, accept 15 (the response's history read, and per event the snapshot before COMMIT:
// its escrow, its history and the event's update); without it, as this file counted then: 6, 9,
// 5, 5, 15 and 11.
// On the one write path every action is two statements, a first use of an account included
// (write_apply creates it).
const ACTION_STATEMENTS = { create: 4, fund: 2, deliver: 2, dispute: 2, resolve: 2 };
// A money request with its Idempotency-Key, counted whole: BEGIN, the read that claims the key,
// the apply that completes it, COMMIT.
const MONEY_REQUEST_ROUND_TRIPS = 4;
const TRANSACTION_CONTROL = /^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b/i;

async function statementsOf<T>(work: () => Promise<T>, options: { withTransactionControl?: boolean } = {}): Promise<{ result: T; statements: string[] }> {
  const statements: string[] = [];
  const listener = (query: { sql: string }) => {
    if (options.withTransactionControl || !TRANSACTION_CONTROL.test(query.sql)) statements.push(query.sql);
  };
  knex.on('query', listener);
  try {
    const result = await work();
    return { result, statements };
  } finally {
    knex.removeListener('query', listener);
  }
}

function funded(balance: bigint): Promise<TestUser> {
  return fundedUser({ XOF: balance });
}

const caller = (user: TestUser) => ({ userId: user.id, sessionId: '', isAdmin: false });

describe('a tontine contribution', () => {
  const tontines = new TontineService({ knex });
  const idempotency = new IdempotencyService(knex, { ttlHours: 24 });
  idempotency.registerResourceStatus(CONTRIBUTION_RESOURCE, contributionStatusOf);

  async function started(size: number, payoutOrder: 'join_order' | 'random' = 'join_order'): Promise<{ tontine: TontineView; members: TestUser[] }> {
    const members: TestUser[] = [];
    for (let i = 0; i < size; i += 1) members.push(await funded(100_000n));
    return { tontine: await tontineThroughService(tontines, members, { body: { name: 'Counted', contribution_amount: 1000, payout_order: payoutOrder } }), members };
  }

  /** The member's contribution as the pipeline runs it, with its Idempotency-Key: every statement counted, BEGIN and COMMIT included. */
  async function viaPipeline(label: string, member: TestUser, tontineId: string, cycle: number): Promise<{ tontine: TontineView; statements: string[] }> {
    const key = crypto.randomUUID();
    const { result, statements } = await statementsOf(
      () =>
        idempotency.perform(
          { userId: member.id, operation: 'contributeToTontine', key, request: { path: { tontineId }, body: { cycle } } },
          async (trx) => {
            const paid = await tontines.contribute(trx, caller(member), tontineId, { cycle });
            return { result: paid.tontine, responseStatus: 200, resource: { type: CONTRIBUTION_RESOURCE, id: paid.contributionId, status: 'paid', location: `/api/tontines/${tontineId}` } };
          },
          { responseStatus: 200 },
        ),
      { withTransactionControl: true },
    );
    console.log(`tontine contribution (${label}): ${statements.length} round trips\n${statements.map((sql) => sql.replace(/\s+/g, ' ').slice(0, 110)).join('\n')}`);
    expect(statements[0], label).toMatch(/^\s*BEGIN/i);
    expect(statements.at(-1), label).toMatch(/^\s*COMMIT/i);
    expect(statements.filter((sql) => sql.includes('write_claim(')).length, label).toBe(1);
    expect(statements.filter((sql) => sql.includes('write_apply(')).length, label).toBe(1);
    expect(statements.length, label).toBeLessThanOrEqual(MONEY_REQUEST_ROUND_TRIPS);
    // The key was completed by the statement that applied the decision, naming the contribution paid.
    const completed = (await knex('idempotency_keys').where({ user_id: member.id, operation: 'contributeToTontine', key }).first('status', 'resource_type', 'resource_status')) as Record<string, string>;
    expect(completed).toEqual({ status: 'completed', resource_type: CONTRIBUTION_RESOURCE, resource_status: 'paid' });
    return { tontine: result, statements };
  }

  const paidPostings = async (tontineId: string) => (await knex('postings').whereRaw("metadata->>'tontine_id' = ?", [tontineId]).select('kind')).map((row) => row.kind as string).sort();

  it(`that does not complete the cycle is at most ${MONEY_REQUEST_ROUND_TRIPS} round trips with its key, ${CONTRIBUTION_STATEMENTS} statements without`, async () => {
    const { tontine, members } = await started(4);
    const { tontine: after } = await viaPipeline('no payout', members[1] as TestUser, tontine.id, 1);
    expect(after.current_cycle).toBe(1);
    const { result, statements } = await statementsOf(() => tontines.contribute(knex, caller(members[2] as TestUser), tontine.id, { cycle: 1 }));
    expect(result.tontine.cycles?.[0]?.collected_minor).toBe('2000');
    expect(statements.length).toBeLessThanOrEqual(CONTRIBUTION_STATEMENTS);
    expect(await paidPostings(tontine.id)).toEqual(['tontine.contribution', 'tontine.contribution']);
  });

  it(`that completes the cycle and pays the pot out is at most ${MONEY_REQUEST_ROUND_TRIPS} round trips, the next cycle opened in them`, async () => {
    const { tontine, members } = await started(3);
    for (const member of members.slice(0, 2)) await tontines.contribute(knex, caller(member), tontine.id, { cycle: 1 });
    const { tontine: after } = await viaPipeline('payout', members[2] as TestUser, tontine.id, 1);
    expect(after.current_cycle).toBe(2);
    expect(after.current_contributions?.map((k) => k.status)).toEqual(['pending', 'pending', 'pending']);
    expect(await paidPostings(tontine.id)).toEqual(['tontine.contribution', 'tontine.contribution', 'tontine.contribution', 'tontine.payout']);
  });

  it(`that completes a random tontine's cycle (the beneficiary drawn then) is at most ${MONEY_REQUEST_ROUND_TRIPS} round trips`, async () => {
    const { tontine, members } = await started(3, 'random');
    for (const member of members.slice(0, 2)) await tontines.contribute(knex, caller(member), tontine.id, { cycle: 1 });
    const { tontine: after } = await viaPipeline('payout, drawn', members[2] as TestUser, tontine.id, 1);
    expect(after.current_cycle).toBe(2);
    expect(after.cycles?.[0]?.beneficiary_user_id).not.toBeNull();
  });

  it(`that completes the last cycle, and so the tontine, is at most ${MONEY_REQUEST_ROUND_TRIPS} round trips`, async () => {
    const { tontine, members } = await started(2);
    for (const member of members) await tontines.contribute(knex, caller(member), tontine.id, { cycle: 1 });
    await tontines.contribute(knex, caller(members[0] as TestUser), tontine.id, { cycle: 2 });
    const { tontine: after } = await viaPipeline('payout, completed', members[1] as TestUser, tontine.id, 2);
    expect(after.status).toBe('completed');
  });
});

describe('an escrow action', () => {
  const escrows = new EscrowService({ knex, feeBps: 100, clock: () => new Date() });
  const idempotency = new IdempotencyService(knex, { ttlHours: 24 });
  idempotency.registerResourceStatus('escrow', escrowStatusOf);

  async function delivered(): Promise<{ id: string; buyer: TestUser }> {
    const { escrow, buyer, seller } = await escrowThroughService(escrows, { status: 'delivered', buyerBalance: 1_000_000n, input: { description: 'Counted' } });
    // The accounts the settlement pays exist already (as for every seller after a first sale and
    // every fee shard after a first escrow): the count is the action's own, not the first use
    // of a seller wallet or of the escrow's fee shard (two statements each).
    await withTransaction(knex, async (trx) => {
      await walletOf(trx, seller.id, 'XOF');
      await shardedPlatformAccount(trx, 'fees', 'XOF', escrow.id);
    });
    return { id: escrow.id, buyer };
  }

  const eventsOf = (db: Knex, id: string) => db('events').where({ subject_type: 'escrow', subject_id: id }).orderBy('object_sequence').select('type', 'data', 'payload');

  it(`accept makes at most ${ESCROW_ACCEPT_LIMIT} statements and writes one event`, async () => {
    const { id, buyer } = await delivered();
    const before = (await eventsOf(knex, id)).length;
    const { result, statements } = await statementsOf(() => escrows.act(knex, caller(buyer), id, { action: 'accept' }));
    expect(result.status).toBe('released');
    console.log(`escrow accept: ${statements.length} statements\n${statements.map((sql) => sql.slice(0, 110)).join('\n')}`);
    expect(statements.length).toBeLessThanOrEqual(ESCROW_ACCEPT_LIMIT);
    const events = await eventsOf(knex, id);
    expect(events.slice(before).map((e) => e.type)).toEqual(ACCEPT_EVENTS);
  });

  it('every other action writes one event too, in a few statements (measured: create, fund, deliver, dispute, resolve)', async () => {
    const buyer = await funded(1_000_000n);
    const seller = await createUser();
    const admin = { userId: (await createUser({ isAdmin: true })).id, sessionId: '', isAdmin: true };
    const created = await statementsOf(() => escrows.create(knex, caller(buyer), { role: 'buyer', counterpartyIdentifier: seller.email as string, amount: 10_000, currency: 'XOF', description: 'Counted' }));
    const id = created.result.id;
    const counts: Record<string, number> = { create: created.statements.length };
    const steps: Array<[string, typeof admin, Parameters<EscrowService['act']>[3]]> = [
      ['fund', caller(buyer), { action: 'fund' }],
      ['deliver', caller(seller), { action: 'deliver' }],
      ['dispute', caller(buyer), { action: 'dispute', reason: 'Counted' }],
      ['resolve', admin, { action: 'resolve', outcome: 'split', sellerAmount: 4000 }],
    ];
    for (const [name, who, command] of steps) {
      const before = (await eventsOf(knex, id)).length;
      counts[name] = (await statementsOf(() => escrows.act(knex, who, id, command))).statements.length;
      expect((await eventsOf(knex, id)).length, name).toBe(before + 1);
    }
    console.log(`escrow statements per action: ${JSON.stringify(counts)}`);
    for (const [name, limit] of Object.entries(ACTION_STATEMENTS)) expect(counts[name], name).toBeLessThanOrEqual(limit);
  });

  it(`each money action, with its Idempotency-Key through the pipeline, is at most ${MONEY_REQUEST_ROUND_TRIPS} round trips, BEGIN and COMMIT included`, async () => {
    const buyer = await funded(1_000_000n);
    const seller = await createUser();
    const admin = { userId: (await createUser({ isAdmin: true })).id, sessionId: '', isAdmin: true };
    const viaPipeline = (who: { userId: string; sessionId: string; isAdmin: boolean }, id: string, command: Parameters<EscrowService['act']>[3], operation: string) =>
      statementsOf(
        () =>
          idempotency.perform(
            { userId: who.userId, operation, key: crypto.randomUUID(), request: { path: { escrowId: id }, command } },
            async (trx) => {
              const view = await escrows.act(trx, who, id, command);
              return { result: view, responseStatus: 200, resource: { type: 'escrow', id: view.id, status: view.status, location: `/api/escrows/${view.id}` } };
            },
            { responseStatus: 200 },
          ),
        { withTransactionControl: true },
      );
    const counts: Record<string, number> = {};
    const keysOf = async (id: string) => (await knex('idempotency_keys').where({ resource_id: id, status: 'completed' }).select('operation')).map((row) => row.operation as string).sort();
    const first = await escrows.create(knex, caller(buyer), { role: 'buyer', counterpartyIdentifier: seller.email as string, amount: 10_000, currency: 'XOF', description: 'Counted' });
    const second = await escrows.create(knex, caller(buyer), { role: 'buyer', counterpartyIdentifier: seller.email as string, amount: 10_000, currency: 'XOF', description: 'Counted' });
    const third = await escrows.create(knex, caller(buyer), { role: 'buyer', counterpartyIdentifier: seller.email as string, amount: 10_000, currency: 'XOF', description: 'Counted' });
    const steps: Array<[string, string, typeof admin, Parameters<EscrowService['act']>[3], string]> = [
      ['fund', first.id, caller(buyer), { action: 'fund' }, 'fundEscrow'],
      ['accept', first.id, caller(buyer), { action: 'accept' }, 'acceptEscrow'],
      ['fund (second)', second.id, caller(buyer), { action: 'fund' }, 'fundEscrow'],
      ['deliver', second.id, caller(seller), { action: 'deliver' }, 'deliverEscrow'],
      ['dispute', second.id, caller(buyer), { action: 'dispute', reason: 'Counted' }, 'disputeEscrow'],
      ['resolve', second.id, admin, { action: 'resolve', outcome: 'split', sellerAmount: 4000 }, 'resolveEscrow'],
      ['fund (third)', third.id, caller(buyer), { action: 'fund' }, 'fundEscrow'],
      ['refund', third.id, caller(seller), { action: 'refund' }, 'refundEscrow'],
    ];
    for (const [name, id, who, command, operation] of steps) {
      const { statements } = await viaPipeline(who, id, command, operation);
      counts[name] = statements.length;
      expect(statements[0], name).toMatch(/^\s*BEGIN/i);
      expect(statements.at(-1), name).toMatch(/^\s*COMMIT/i);
      expect(statements.filter((sql) => sql.includes('write_claim(')).length, name).toBe(1);
      expect(statements.filter((sql) => sql.includes('write_apply(')).length, name).toBe(1);
      // One request, one transaction: no savepoint of a shared one.
      expect(statements.some((sql) => /SAVEPOINT/i.test(sql)), name).toBe(false);
    }
    console.log(`escrow round trips per money request: ${JSON.stringify(counts)}`);
    for (const [name, count] of Object.entries(counts)) expect(count, name).toBeLessThanOrEqual(MONEY_REQUEST_ROUND_TRIPS);
    // Each key was completed by the statement that applied its decision.
    expect(await keysOf(first.id)).toEqual(['acceptEscrow', 'fundEscrow']);
    expect(await keysOf(second.id)).toEqual(['deliverEscrow', 'disputeEscrow', 'fundEscrow', 'resolveEscrow']);
    expect(await keysOf(third.id)).toEqual(['fundEscrow', 'refundEscrow']);
  });

  it(`a split ruling that holds a party's share, with its Idempotency-Key, is at most ${MONEY_REQUEST_ROUND_TRIPS} round trips, the key completed with the escrow held`, async () => {
    const limits = new LimitsService({ knex, policy: SHIPPED_LIMIT_POLICY });
    const counts: Record<string, number> = {};
    const rulings: Array<[string, Array<'buyer' | 'seller'>, number]> = [
      ["the buyer's share held", ['buyer'], 100_000],
      ['both over their caps', ['buyer', 'seller'], 150_000],
    ];
    for (const [name, limited, sellerAmount] of rulings) {
      const buyer = await funded(1_000_000n);
      const seller = await createUser();
      const admin = { userId: (await createUser({ isAdmin: true })).id, sessionId: '', isAdmin: true };
      const escrow = await escrows.create(knex, caller(buyer), { role: 'buyer', counterpartyIdentifier: seller.email as string, amount: 300_000, currency: 'XOF', description: 'Counted' });
      await escrows.act(knex, caller(buyer), escrow.id, { action: 'fund' });
      await escrows.act(knex, caller(buyer), escrow.id, { action: 'dispute', reason: 'Counted' });
      await withTransaction(knex, async (trx) => {
        await walletOf(trx, seller.id, 'XOF');
        await shardedPlatformAccount(trx, 'fees', 'XOF', escrow.id);
      });
      // The shipped caps (tier_0 receives at most 100,000 XOF at once) for the ruling alone.
      await limits.install();
      try {
        await knex('users').where({ id: buyer.id }).update({ tier: limited.includes('buyer') ? 'tier_0' : 'tier_2' });
        await knex('users').where({ id: seller.id }).update({ tier: limited.includes('seller') ? 'tier_0' : 'tier_2' });
        const key = crypto.randomUUID();
        const command = { action: 'resolve' as const, outcome: 'split' as const, sellerAmount };
        const { result, statements } = await statementsOf(
          () =>
            idempotency.perform(
              { userId: admin.userId, operation: 'resolveEscrow', key, request: { path: { escrowId: escrow.id }, command } },
              async (trx) => {
                const view = await escrows.act(trx, admin, escrow.id, command);
                return { result: view, responseStatus: 200, resource: { type: 'escrow', id: view.id, status: view.status, location: `/api/escrows/${view.id}` } };
              },
              { responseStatus: 200 },
            ),
          { withTransactionControl: true },
        );
        counts[name] = statements.length;
        expect(result, name).toMatchObject({ status: 'accepted', payout: { status: 'held_for_verification', recipient: limited.includes('seller') ? 'seller' : 'buyer' } });
        expect(statements.some((sql) => /SAVEPOINT/i.test(sql)), name).toBe(false);
        expect(statements.filter((sql) => sql.includes('write_apply(')).length, name).toBe(1);
        expect(await knex('idempotency_keys').where({ user_id: admin.userId, operation: 'resolveEscrow', key }).first('status', 'resource_status')).toEqual({ status: 'completed', resource_status: 'accepted' });
      } finally {
        await new LimitsService({ knex, policy: UNBOUNDED_LIMIT_POLICY }).install();
      }
    }
    console.log(`escrow round trips of a split ruling that holds: ${JSON.stringify(counts)}`);
    for (const [name, count] of Object.entries(counts)) expect(count, name).toBeLessThanOrEqual(MONEY_REQUEST_ROUND_TRIPS);
  });

  it('accept answers the history it appended in memory, as a later read of the escrow shows it', async () => {
    const { id, buyer } = await delivered();
    const accepted = await escrows.act(knex, caller(buyer), id, { action: 'accept' });
    expect(accepted.history.map((entry) => entry.type)).toEqual(['escrow.created', 'escrow.funded', 'escrow.delivered', 'escrow.released']);
    expect(accepted.history.at(-1)).toMatchObject({ actor_role: 'buyer', actor_user_id: buyer.id, occurred_at: accepted.released_at });
    expect(await escrows.get(caller(buyer), id)).toEqual(accepted);
  });

  it('the event of an accept carries the escrow after it (to no party in particular) and the status before it', async () => {
    const { id, buyer } = await delivered();
    const accepted = await escrows.act(knex, caller(buyer), id, { action: 'accept' });
    const released = (await eventsOf(knex, id)).at(-1) as { data: { object: Record<string, unknown>; previous_status: string }; payload: Record<string, unknown> };
    expect(released.data.previous_status).toBe('delivered');
    expect(released.data.object).toEqual({ ...accepted, role: 'administrator', allowed_actions: [] });
    expect(released.payload).toEqual({ accepted_by: 'buyer', ...accepted.settlement });
  });
});

describe('a transfer', () => {
  const idempotency = new IdempotencyService(knex, { ttlHours: 24 });
  const transfers = new TransferService({ knex, idempotency, rail: new SandboxRail() });
  // On the one write path, a window at a time: the parties read in one plain statement, and
  // the window applied in one (write_apply_batch: the key's claim, the posting, the row, the
  // key's completion), which is its own transaction: no BEGIN, no COMMIT.
  const TRANSFER_ROUND_TRIPS = 2;

  it(`alone in its window, with its Idempotency-Key, is ${TRANSFER_ROUND_TRIPS} round trips, transaction control included (at most ${MONEY_REQUEST_ROUND_TRIPS})`, async () => {
    const [sender, recipient] = [await funded(10_000n), await createUser()];
    await currencies.require(knex, 'XOF', 'body.currency');
    const input = { amount: 700, currency: 'XOF', recipientIdentifier: recipient.email as string };
    const { result, statements } = await statementsOf(() => transfers.create({ userId: sender.id }, transferClaim(crypto.randomUUID(), input), input), { withTransactionControl: true });
    console.log(`transfer: ${statements.length} round trips\n${statements.map((sql) => sql.replace(/\s+/g, ' ').slice(0, 100)).join('\n')}`);
    expect(result.status).toBe('completed');
    expect(statements.filter((sql) => TRANSACTION_CONTROL.test(sql))).toEqual([]);
    expect(statements.filter((sql) => sql.includes('write_apply_batch(')).length).toBe(1);
    expect(statements.length).toBe(TRANSFER_ROUND_TRIPS);
    expect(statements.length).toBeLessThanOrEqual(MONEY_REQUEST_ROUND_TRIPS);
    const [key] = await knex('idempotency_keys').where({ user_id: sender.id, operation: 'createTransfer' }).select('status', 'resource_id');
    expect(key).toEqual({ status: 'completed', resource_id: result.id });
  });
});
