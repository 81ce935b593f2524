import crypto from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/errors';
import { IdempotencyService } from '../../src/modules/idempotency';
import { CONTRIBUTION_RESOURCE, contributionStatusOf, TontineService, type TontineView } from '../../src/modules/tontines';
import { databaseKind, testKnex } from '../support/database';
import { fundedUser, walletBalance, type TestUser } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { poolBalance, tontineThroughService } from '../support/tontines';

const knex = testKnex();
const DAY_MS = 86_400_000;

/**
 * The job marks every due tontine of the database, and on the embedded back-end the run's
 * files share one database: these tests run their clocks years in the past, where only
 * their own tontines fall due, and read only their own tontines' rows.
 */
const PAST = { lateMarking: Date.UTC(2001, 0, 1, 9, 0, 0), instances: Date.UTC(2002, 1, 1), property: Date.UTC(2003, 2, 1) };

async function statusesOf(tontineId: string, cycle: number, users: readonly TestUser[]): Promise<string[]> {
  const rows = (await knex('tontine_contributions').where({ tontine_id: tontineId, cycle_number: cycle }).select('user_id', 'status')) as Array<{ user_id: string; status: string }>;
  return users.map((user) => rows.find((row) => row.user_id === user.id)?.status ?? 'none');
}

const lateEventsOf = (tontineIds: readonly string[]) => knex('events').whereIn('subject_id', [...tontineIds]).andWhere({ type: 'tontine.contributions_late' }).orderBy('sequence').select('subject_id', 'actor_user_id', 'payload');

/** A service on the run's database with a clock the test moves. */
function serviceWithClock(startMs: number) {
  const clock = { nowMs: startMs };
  const idempotency = new IdempotencyService(knex, { ttlHours: 24 });
  idempotency.registerResourceStatus(CONTRIBUTION_RESOURCE, contributionStatusOf);
  const service = new TontineService({ knex, now: () => new Date(clock.nowMs) });
  return { service, clock, idempotency };
}

/** A contribution as POST /tontines/{id}/contributions makes it: under `key`, claimed and completed by the idempotency service. */
function contribute(idempotency: IdempotencyService, service: TontineService, userId: string, tontineId: string, key: string, body: { cycle: number }): Promise<TontineView> {
  const request = { userId, operation: 'contributeToTontine', key, request: { path: { tontineId }, body } };
  return idempotency.execute(request, async (trx) => {
    const { tontine, contributionId } = await service.contribute(trx, { userId }, tontineId, body);
    return { result: tontine, responseStatus: 200, responseBody: tontine, resource: { type: 'tontine_contribution', id: contributionId, status: 'paid', location: `/api/tontines/${tontineId}` } };
  });
}

async function fundedUsers(balances: readonly bigint[]): Promise<TestUser[]> {
  const users: TestUser[] = [];
  for (const balance of balances) {
    const user = await fundedUser({ XOF: balance });
    users.push(user);
  }
  return users;
}

/** A started tontine of `users` (the first organizes), weekly, `amount` XOF, in join order. */
function startedTontine(service: TontineService, users: readonly TestUser[], amount: number): Promise<TontineView> {
  return tontineThroughService(service, users, { body: { name: 'Property circle', contribution_amount: amount } });
}

async function errorCode(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    if (error instanceof DomainError) return error.code;
    throw error;
  }
}

describe('late marking (background job)', () => {
  it('marks the unpaid contributions of a due cycle late, once; a late member still pays and the payout waits for the whole pot', async () => {
    const start = PAST.lateMarking;
    const { service, clock, idempotency } = serviceWithClock(start);
    const users = await fundedUsers([10_000n, 10_000n, 10_000n]);
    const [a, b, c] = users as [TestUser, TestUser, TestUser];
    const tontine = await startedTontine(service, users, 1000);
    expect(tontine.next_payout_at).toBe(new Date(start + 7 * DAY_MS).toISOString());
    await contribute(idempotency, service, a.id, tontine.id, crypto.randomUUID(), { cycle: 1 });

    clock.nowMs = start + 7 * DAY_MS - 1;
    await service.markLateContributions();
    expect(await statusesOf(tontine.id, 1, users)).toEqual(['paid', 'pending', 'pending']);
    clock.nowMs = start + 7 * DAY_MS;
    expect(await service.markLateContributions()).toBeGreaterThanOrEqual(2);
    await service.markLateContributions();
    expect(await statusesOf(tontine.id, 1, users)).toEqual(['paid', 'late', 'late']);
    const view = await service.get({ userId: a.id }, tontine.id);
    expect(view.current_contributions?.map((k) => [k.user_id, k.status])).toEqual([
      [a.id, 'paid'],
      [b.id, 'late'],
      [c.id, 'late'],
    ]);
    expect(await lateEventsOf([tontine.id])).toEqual([{ subject_id: tontine.id, actor_user_id: null, payload: { cycle: 1, user_ids: expect.arrayContaining([b.id, c.id]) } }]);

    clock.nowMs = start + 9 * DAY_MS;
    const afterB = await contribute(idempotency, service, b.id, tontine.id, crypto.randomUUID(), { cycle: 1 });
    expect(afterB.current_cycle).toBe(1);
    expect(afterB.pool_balance).toBe('2000');
    const afterC = await contribute(idempotency, service, c.id, tontine.id, crypto.randomUUID(), { cycle: 1 });
    expect(afterC).toMatchObject({ current_cycle: 2, pool_balance: '0', next_payout_at: new Date(start + 14 * DAY_MS).toISOString() });
    expect(afterC.current_contributions?.map((k) => k.status)).toEqual(['pending', 'pending', 'pending']);
    expect(await walletBalance(a.id, 'XOF')).toBe(12_000n);
    const paidEvents = await knex('events').where({ subject_id: tontine.id, type: 'tontine.contribution_paid' }).orderBy('sequence').select('payload');
    expect(paidEvents.map((e: { payload: { late: boolean } }) => e.payload.late)).toEqual([false, true, true]);
  });

  it('is safe with several instances at once, and skips a tontine another transaction holds instead of waiting', async () => {
    const start = PAST.instances;
    const { service, clock } = serviceWithClock(start);
    const tontines: TontineView[] = [];
    const members: TestUser[][] = [];
    for (let i = 0; i < 3; i += 1) {
      members.push(await fundedUsers([0n, 0n]));
      tontines.push(await startedTontine(service, members[i]!, 500));
    }
    clock.nowMs = start + 8 * DAY_MS;
    const other = serviceWithClock(clock.nowMs).service;
    const ids = tontines.map((t) => t.id);
    if (databaseKind() === 'postgres') {
      // Another instance (or a contribution) holds the first tontine: the job passes it by.
      const holder = await knex.transaction();
      try {
        await holder('tontines').where({ id: ids[0] }).forUpdate().first();
        const run = await Promise.race([service.markLateContributions().then(() => 'ran'), new Promise<string>((resolve) => setTimeout(() => resolve('waited'), 5_000))]);
        expect(run).toBe('ran');
        expect(await statusesOf(ids[0]!, 1, members[0]!)).toEqual(['pending', 'pending']);
        expect(await statusesOf(ids[1]!, 1, members[1]!)).toEqual(['late', 'late']);
      } finally {
        await holder.commit();
      }
    }
    await Promise.all([service.markLateContributions(), other.markLateContributions(), service.markLateContributions()]);
    for (const [index, id] of ids.entries()) expect(await statusesOf(id, 1, members[index]!)).toEqual(['late', 'late']);
    const events = await lateEventsOf(ids);
    expect(events.map((e: { subject_id: string }) => e.subject_id).sort()).toEqual([...ids].sort());
  });
});

type Command = { kind: 'pay'; member: number; replay: boolean; cycleOffset: number } | { kind: 'advance'; days: number } | { kind: 'markLate' } | { kind: 'cancel' };

const commandArbitrary: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({ kind: fc.constant('pay' as const), member: fc.integer({ min: 0, max: 2 }), replay: fc.boolean(), cycleOffset: fc.constantFrom(0, 0, 0, -1, 1) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('advance' as const), days: fc.integer({ min: 1, max: 9 }) }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'markLate' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'cancel' as const }) },
);

describe('tontine money (property)', () => {
  it('over random interleavings of contributions (naming the open cycle or another), replays, late marking and cancellation, the pool holds exactly the open cycle and no money is created or lost', async () => {
    const amount = 100n;
    await fc.assert(
      fc.asyncProperty(fc.bigInt({ min: 0n, max: 450n }), fc.array(commandArbitrary, { minLength: 1, maxLength: 18 }), async (poorBalance, commands) => {
        const start = PAST.property;
        const { service, clock, idempotency } = serviceWithClock(start);
        const initial = [5_000n, 5_000n, poorBalance];
        const users = await fundedUsers(initial);
        const n = users.length;
        const tontine = await startedTontine(service, users, Number(amount));
        const beneficiaries = (tontine.cycles ?? []).map((cycle) => cycle.beneficiary_user_id);
        const dueAt = (tontine.cycles ?? []).map((cycle) => new Date(cycle.due_at).getTime());

        // The model: what the contract says must have happened.
        const model = {
          status: 'active' as string,
          cycle: 1,
          paid: new Set<number>(),
          late: new Set<number>(),
          wallet: [...initial],
          usedKeys: [] as Array<{ member: number; key: string; cycle: number; succeeded: boolean }>,
        };
        for (const command of commands) {
          if (command.kind === 'pay') {
            const earlier = command.replay ? model.usedKeys.filter((k) => k.member === command.member).at(-1) : undefined;
            const key = earlier?.key ?? crypto.randomUUID();
            // The contribution names a cycle: usually the open one, sometimes the one before or after.
            const cycle = model.cycle + command.cycleOffset;
            const outcome = await errorCode(contribute(idempotency, service, users[command.member]!.id, tontine.id, key, { cycle }));
            let expected: string;
            if (earlier?.succeeded) expected = earlier.cycle === cycle ? 'IdempotencyKeyAlreadyProcessed' : 'IdempotencyKeyReused';
            else if (model.status !== 'active') expected = 'InvalidTontineState';
            // Every earlier cycle is complete, so every member paid it.
            else if (cycle !== model.cycle) expected = cycle >= 1 && cycle < model.cycle ? 'ContributionAlreadyPaid' : 'CycleNotOpen';
            else if (model.paid.has(command.member)) expected = 'ContributionAlreadyPaid';
            else if (model.wallet[command.member]! < amount) expected = 'InsufficientFunds';
            else expected = 'ok';
            expect(outcome).toBe(expected);
            if (!earlier) model.usedKeys.push({ member: command.member, key, cycle, succeeded: outcome === 'ok' });
            else if (outcome === 'ok') Object.assign(earlier, { cycle, succeeded: true });
            if (outcome === 'ok') {
              model.wallet[command.member]! -= amount;
              model.paid.add(command.member);
              model.late.delete(command.member);
              if (model.paid.size === n) {
                const beneficiary = users.findIndex((u) => u.id === beneficiaries[model.cycle - 1]);
                model.wallet[beneficiary]! += amount * BigInt(n);
                model.paid.clear();
                model.late.clear();
                if (model.cycle === n) model.status = 'completed';
                else model.cycle += 1;
              }
            }
          } else if (command.kind === 'advance') {
            clock.nowMs += command.days * DAY_MS;
          } else if (command.kind === 'markLate') {
            await service.markLateContributions();
            if (model.status === 'active' && clock.nowMs >= dueAt[model.cycle - 1]!) {
              for (let m = 0; m < n; m += 1) if (!model.paid.has(m)) model.late.add(m);
            }
          } else {
            const outcome = await errorCode(service.cancel(knex, { userId: users[0]!.id }, tontine.id));
            // Once a pot is paid out (cycle 2 on), no member can end the tontine.
            expect(outcome).toBe(model.status === 'active' && model.cycle === 1 ? 'ok' : 'InvalidTontineState');
            if (outcome === 'ok') {
              for (const m of model.paid) model.wallet[m]! += amount;
              model.paid.clear();
              model.status = 'canceled';
            }
          }

          // After every step: the pool invariant, conservation, and each member's money and status.
          const pool = await poolBalance(tontine.id);
          expect(pool).toBe(model.status === 'active' ? amount * BigInt(model.paid.size) : 0n);
          const wallets: bigint[] = [];
          for (const user of users) wallets.push(await walletBalance(user.id, 'XOF'));
          expect(wallets).toEqual(model.wallet);
          expect(wallets.reduce((sum, w) => sum + w, 0n) + pool).toBe(initial.reduce((sum, w) => sum + w, 0n));
          const view = await service.get({ userId: users[0]!.id }, tontine.id);
          expect(view.status).toBe(model.status);
          if (model.status === 'active') {
            expect(view.current_cycle).toBe(model.cycle);
            expect(view.current_contributions?.map((k) => k.status)).toEqual(users.map((_, m) => (model.paid.has(m) ? 'paid' : model.late.has(m) ? 'late' : 'pending')));
          }
        }
        if (model.status === 'completed') {
          // N contributions paid and N x contribution received by everyone: back where they started.
          expect(model.wallet).toEqual(initial);
        }
      }),
      { numRuns: 12 },
    );
    await expectLedgerInvariants(knex);
  }, 300_000);
});
