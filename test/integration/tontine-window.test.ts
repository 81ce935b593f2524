import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { requestHash } from '../../src/modules/idempotency';
import { currencies, setAccountStatus, walletOf } from '../../src/modules/ledger';
import type { TontineService } from '../../src/modules/tontines';
import { tontineDecider, type Contributed } from '../../src/modules/tontines/tontine-window';
import { DecisionWindow } from '../../src/modules/writes';
import { buildTestApp, type App } from '../support/app';
import { databaseKind, testKnex } from '../support/database';
import { gate, untilWaitingForLock } from '../support/lock-wait';
import { createUser, fundedUser, walletBalance, type TestUser } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { SHIPPED_LIMIT_POLICY } from '../support/limits';
import { poolBalance, tontineThroughService } from '../support/tontines';
import { statementsSent } from '../support/sent-statements';

/**
 * Tontine contributions a window at a time: the window's (tontine, member) pairs read in one
 * plain statement, applied in one (write_apply_batch), no BEGIN or COMMIT. Contributions to one
 * tontine in one window are decided in turn, each on the state the earlier ones leave, so a
 * whole cycle paid in one window completes it once and pays its pot once; racing windows and
 * contributions alone meet the cycle's paid count (tontines.paid_in_cycle), and the loser runs
 * again alone, locked: without it, two contributions decided from one read would each see the
 * other unpaid, and a cycle fully paid would never pay its pot.
 */
const knex = testKnex();
const TRANSACTION_CONTROL = /^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b/i;
let app: App;
let tontines: TontineService;

beforeAll(async () => {
  // The shipped caps: a tier_0 beneficiary's pot over its per-transaction cap is held.
  app = await buildTestApp({ limitPolicy: SHIPPED_LIMIT_POLICY });
  tontines = app.services.tontines;
  await currencies.require(knex, 'XOF');
});

/** A contribution as the pipeline hands it over: the member, the tontine, the cycle, a fresh Idempotency-Key. */
function submission(member: TestUser, tontineId: string, cycle: number, key = crypto.randomUUID()) {
  const pending = app.services.idempotency.pendingKey({ userId: member.id, operation: 'contributeToTontine', key, requestHash: requestHash({ path: { tontineId }, body: { cycle } }) }, 200);
  return { caller: { userId: member.id }, tontineId, body: { cycle }, key: pending };
}

function statementsOf<T>(work: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  return statementsSent(knex, work);
}

async function count(table: string, where: Record<string, unknown>): Promise<number> {
  return Number((await knex(table).where(where).count<Array<{ n: string }>>({ n: '*' }))[0]?.n);
}

const payouts = (tontineId: string) => knex('postings').where({ kind: 'tontine.payout' }).whereRaw("metadata->>'tontine_id' = ?", [tontineId]).count<Array<{ n: string }>>({ n: '*' }).then((rows) => Number(rows[0]?.n));

async function members(n: number): Promise<TestUser[]> {
  return Promise.all(Array.from({ length: n }, () => fundedUser({ XOF: 100_000n })));
}

describe('tontine contributions in a window', () => {
  it('one alone in its window is 2 round trips, transaction control included, and completes its key naming the contribution', async () => {
    const [organizer, member] = await members(2);
    const tontine = await tontineThroughService(tontines, [organizer as TestUser, member as TestUser]);
    const key = crypto.randomUUID();
    const { result, statements } = await statementsOf(() => tontines.contributeInWindow(submission(member as TestUser, tontine.id, 1, key).key, { userId: (member as TestUser).id }, tontine.id, { cycle: 1 }));
    expect(statements.filter((sql) => TRANSACTION_CONTROL.test(sql))).toEqual([]);
    expect(statements.length).toBe(2);
    expect(result.tontine.cycles?.[0]?.collected_minor).toBe('1000');
    const completed = await knex('idempotency_keys').where({ user_id: (member as TestUser).id, key }).first('status', 'resource_type', 'resource_id');
    expect(completed).toEqual({ status: 'completed', resource_type: 'tontine_contribution', resource_id: result.contributionId });
    expect(await knex('idempotency_keys').where({ user_id: (member as TestUser).id, key }).first('resource_status', 'resource_location')).toEqual({
      resource_status: 'paid',
      resource_location: `/api/tontines/${tontine.id}`,
    });
    expect(await knex('tontines').where({ id: tontine.id }).first('paid_in_cycle')).toEqual({ paid_in_cycle: 1 });
  });

  it("every member's contribution in one window: each decided on the state the earlier leave, the cycle completed once, its pot paid once, in the window's statement", async () => {
    const circle = await members(5);
    const tontine = await tontineThroughService(tontines, circle);
    const { result, statements } = await statementsOf(() => tontines.window.runWindow(circle.map((member) => submission(member, tontine.id, 1))));
    // Nothing ran again alone: every contribution applied as decided in the window.
    expect(statements.filter((sql) => TRANSACTION_CONTROL.test(sql))).toEqual([]);
    expect(statements.length).toBe(2);
    const views = result.map((answer) => ('after' in answer ? answer.after.tontine : answer.error));
    expect(views.map((view) => (view as { current_cycle: number }).current_cycle)).toEqual([1, 1, 1, 1, 2]);
    expect(views.slice(0, 4).map((view) => (view as { cycles: Array<{ collected_minor: string }> }).cycles[0]?.collected_minor)).toEqual(['1000', '2000', '3000', '4000']);
    expect(await payouts(tontine.id)).toBe(1);
    expect(await poolBalance(tontine.id)).toBe(0n);
    // The last one answers the pot paid, not held.
    expect((views[4] as { cycles: Array<{ status: string; payout?: unknown }> }).cycles[0]).toMatchObject({ status: 'paid_out' });
    expect((views[4] as { cycles: Array<{ status: string; payout?: unknown }> }).cycles[0]?.payout).toBeUndefined();
    // The organizer receives cycle 1's pot: 5 x 1000, less their own contribution.
    expect(await walletBalance((circle[0] as TestUser).id, 'XOF')).toBe(100_000n + 4000n);
    expect(await knex('tontines').where({ id: tontine.id }).first('current_cycle', 'paid_in_cycle')).toEqual({ current_cycle: 2, paid_in_cycle: 0 });
    const keys = await knex('idempotency_keys').whereIn('user_id', circle.map((member) => member.id)).select('status', 'resource_type');
    expect(keys).toEqual(circle.map(() => ({ status: 'completed', resource_type: 'tontine_contribution' })));
    expect(await count('events', { subject_id: tontine.id, type: 'tontine.payout_made' })).toBe(1);
    expect(await count('events', { subject_id: tontine.id, type: 'tontine.cycle_opened' })).toBe(1);
  });

  it('every member at once through the group commit, two cycles running: each contribution paid once, each pot paid once', async () => {
    const circle = await members(5);
    const tontine = await tontineThroughService(tontines, circle);
    for (const cycle of [1, 2]) {
      const outcomes = await Promise.allSettled(circle.map((member) => tontines.contributeInWindow(submission(member, tontine.id, cycle).key, { userId: member.id }, tontine.id, { cycle })));
      expect(outcomes.map((outcome) => (outcome.status === 'fulfilled' ? 'paid' : (outcome.reason as Error).message))).toEqual(circle.map(() => 'paid'));
      expect(await payouts(tontine.id)).toBe(cycle);
      expect(await poolBalance(tontine.id)).toBe(0n);
    }
    expect(await knex('tontines').where({ id: tontine.id }).first('current_cycle', 'paid_in_cycle')).toEqual({ current_cycle: 3, paid_in_cycle: 0 });
    expect(await count('tontine_contributions', { tontine_id: tontine.id, status: 'paid' })).toBe(10);
    await expectLedgerInvariants(knex);
  });

  it('a window mixing tontines: each applied on its own, a stranger refused (its key free), a second payment refused, a contribution after its cycle completed run alone', async () => {
    const [a, b] = await members(2);
    const [c, d, e] = await members(3);
    const stranger = await createUser();
    const first = await tontineThroughService(tontines, [a as TestUser, b as TestUser]);
    const second = await tontineThroughService(tontines, [c as TestUser, d as TestUser, e as TestUser]);
    const window = [
      submission(a as TestUser, first.id, 1),
      submission(c as TestUser, second.id, 1),
      submission(b as TestUser, first.id, 1),
      submission(stranger, second.id, 1),
      submission(d as TestUser, second.id, 1),
      submission(c as TestUser, second.id, 1),
      submission(a as TestUser, first.id, 2),
    ];
    const answers = await tontines.window.runWindow(window);
    const summary = answers.map((answer) => ('after' in answer ? `${answer.after.tontine.id === first.id ? 'first' : 'second'} cycle ${answer.after.tontine.current_cycle}` : (answer.error as { code?: string }).code));
    expect(summary).toEqual(['first cycle 1', 'second cycle 1', 'first cycle 2', 'TontineNotFound', 'second cycle 1', 'ContributionAlreadyPaid', 'first cycle 2']);
    expect(await payouts(first.id)).toBe(1);
    expect(await payouts(second.id)).toBe(0);
    expect(await poolBalance(first.id)).toBe(1000n);
    expect(await poolBalance(second.id)).toBe(2000n);
    expect(await knex('idempotency_keys').where({ user_id: stranger.id })).toEqual([]);
    const keys = await knex('idempotency_keys').whereIn('user_id', [a, b, c, d].map((member) => (member as TestUser).id)).select('status');
    expect(keys).toEqual(Array.from({ length: 5 }, () => ({ status: 'completed' })));
    await expectLedgerInvariants(knex);
  });

  it("a cycle's pot its beneficiary's limits refuse is held by the window's statement, beside another tontine's contribution", async () => {
    const contribution = 60_000;
    const organizer = await fundedUser({ XOF: 1_000_000n });
    const member = await fundedUser({ XOF: 150_000n });
    await knex('users').where({ id: organizer.id }).update({ tier: 'tier_2' });
    await knex('users').where({ id: member.id }).update({ tier: 'tier_0' });
    const held = await tontineThroughService(tontines, [organizer, member], { body: { contribution_amount: contribution } });
    for (const [who, cycle] of [[organizer, 1], [member, 1], [organizer, 2]] as const) await tontines.contributeInWindow(submission(who, held.id, cycle).key, { userId: who.id }, held.id, { cycle });
    const [x, y] = await members(2);
    const other = await tontineThroughService(tontines, [x as TestUser, y as TestUser]);
    const key = crypto.randomUUID();
    const { result, statements } = await statementsOf(() => tontines.window.runWindow([submission(member, held.id, 2, key), submission(x as TestUser, other.id, 1)]));
    expect(statements.filter((sql) => TRANSACTION_CONTROL.test(sql))).toEqual([]);
    const [last, beside] = result.map((answer) => ('after' in answer ? answer.after : answer.error)) as [{ tontine: { status: string; cycles: Array<{ status: string; payout?: { status: string } }> } }, { tontine: { id: string } }];
    expect(last.tontine.status).toBe('completed');
    expect(last.tontine.cycles[1]).toMatchObject({ status: 'paid_out', payout: { status: 'held_for_verification' } });
    expect(beside.tontine.id).toBe(other.id);
    expect(await poolBalance(held.id)).toBe(BigInt(2 * contribution));
    expect(await payouts(held.id)).toBe(1);
    expect(await count('held_payouts', { subject_id: held.id, status: 'held_for_verification' })).toBe(1);
    expect(await count('events', { subject_id: held.id, type: 'tontine.payout_held' })).toBe(1);
    expect(await knex('idempotency_keys').where({ user_id: member.id, key }).first('status', 'resource_type')).toEqual({ status: 'completed', resource_type: 'tontine_contribution' });
    expect(await poolBalance(other.id)).toBe(1000n);
    await expectLedgerInvariants(knex);
  });

  it('run again by the same request (a fault hid its commit), a contribution answers the tontine as it is now and the contribution it paid, its key completed with it', async () => {
    const [organizer, member] = (await members(2)) as [TestUser, TestUser];
    const tontine = await tontineThroughService(tontines, [organizer, member]);
    const paid = submission(member, tontine.id, 1);
    const [made] = await tontines.window.runWindow([paid]);
    const contributionId = made && 'after' in made ? made.after.contributionId : undefined;
    expect(contributionId).toEqual(expect.any(String));
    const again = await tontines.window.runAlone(paid);
    expect(again).toEqual({ after: { tontine: await tontines.get({ userId: member.id }, tontine.id), contributionId } });
    expect(paid.key.completedWith).toEqual({ responseStatus: 200, resourceType: 'tontine_contribution', resourceId: contributionId, resourceStatus: 'paid' });
    expect(await count('tontine_contributions', { tontine_id: tontine.id, status: 'paid' })).toBe(1);
    // A contribution id that names no contribution is no completed contribution.
    const decider = tontineDecider(knex, { alone: () => Promise.reject(new Error('not run')), current: () => Promise.reject(new Error('not read')) });
    expect(await decider.completed(crypto.randomUUID(), paid)).toBeUndefined();
  });

  it('a tontine id in capitals is the same tontine; one that is no UUID is not found, without a read', async () => {
    const [organizer, member] = (await members(2)) as [TestUser, TestUser];
    const tontine = await tontineThroughService(tontines, [organizer, member]);
    const [capitals] = await tontines.window.runWindow([submission(member, tontine.id.toUpperCase(), 1)]);
    expect(capitals && 'after' in capitals ? capitals.after.tontine.cycles?.[0]?.collected_minor : capitals).toBe('1000');
    for (const id of ['not-a-tontine', `x${tontine.id}`, `${tontine.id}x`]) {
      const { result, statements } = await statementsOf(() => tontines.window.runWindow([submission(organizer, id, 1)]));
      expect(result.map((answer) => ('error' in answer ? (answer.error as { code?: string }).code : answer))).toEqual(['TontineNotFound']);
      // The window's one statement, write_apply_batch: the key claimed, then released for the refusal.
      expect(statements.length).toBe(1);
    }
    expect(await count('tontine_contributions', { tontine_id: tontine.id, status: 'paid' })).toBe(1);
  });

  it("a member's contribution the wallet does not cover runs alone and is refused naming it; the same member's second in the window, refused on the state the first was to leave, runs alone too", async () => {
    const [organizer, member] = (await members(2)) as [TestUser, TestUser];
    const poor = await fundedUser({ XOF: 500n });
    const tontine = await tontineThroughService(tontines, [organizer, member, poor]);
    const answers = await tontines.window.runWindow([submission(poor, tontine.id, 1), submission(poor, tontine.id, 1)]);
    for (const answer of answers) {
      expect(answer).toMatchObject({
        error: { code: 'InsufficientFunds', message: 'Insufficient funds: your XOF wallet does not cover this contribution.', details: { currency: 'XOF', available: '500', required: '1000' } },
      });
    }
    // A frozen wallet: named as the member's own.
    await setAccountStatus(knex, (await walletOf(knex, member.id, 'XOF')).id, 'frozen');
    const [frozen] = await tontines.window.runWindow([submission(member, tontine.id, 1)]);
    expect(frozen).toMatchObject({ error: { code: 'WalletFrozen', details: { party: 'sender' } } });
    expect(await count('tontine_contributions', { tontine_id: tontine.id, status: 'paid' })).toBe(0);
  });

  it("the last contribution's events each name the status before them: the tontine's for the first, then the status the event before shows", async () => {
    const [organizer, member] = (await members(2)) as [TestUser, TestUser];
    const tontine = await tontineThroughService(tontines, [organizer, member]);
    for (const [who, cycle] of [[organizer, 1], [member, 1], [organizer, 2]] as const) await tontines.contributeInWindow(submission(who, tontine.id, cycle).key, { userId: who.id }, tontine.id, { cycle });
    const last = await knex('events').where({ subject_id: tontine.id }).max<Array<{ n: number }>>({ n: 'object_sequence' });
    const [answer] = await tontines.window.runWindow([submission(member, tontine.id, 2)]);
    expect(answer && 'after' in answer ? answer.after.tontine.status : answer).toBe('completed');
    const events = (await knex('events').where({ subject_id: tontine.id }).where('object_sequence', '>', last[0]?.n ?? 0).orderBy('object_sequence').select('type', 'data')) as Array<{
      type: string;
      data: { object: { status: string }; previous_status: string };
    }>;
    expect(events.length).toBeGreaterThan(1);
    expect(events[0]?.data.previous_status).toBe('active');
    for (const [index, event] of events.entries()) if (index > 0) expect(event.data.previous_status).toBe(events[index - 1]?.data.object.status);
    expect(events.at(-1)?.data.object.status).toBe('completed');
  });

  it('a window whose read fails is said to have failed as a whole, naming tontine contributions, and each of its contributions runs alone', async () => {
    const [organizer, member] = (await members(2)) as [TestUser, TestUser];
    const tontine = await tontineThroughService(tontines, [organizer, member]);
    // The window's one read meets a database error.
    const failing = { raw: () => Promise.reject(new Error('the read failed')) } as unknown as Knex;
    const ranAlone = { contributionId: 'alone' } as unknown as Contributed;
    const decider = tontineDecider(failing, { alone: async () => ranAlone, current: () => Promise.reject(new Error('not read')) });
    const warn = vi.fn();
    const window = new DecisionWindow(knex, decider, () => new Date(), { warn }, { windowMs: 1, maxItems: 64 });
    expect(await window.submit(submission(member, tontine.id, 1))).toEqual({ after: ranAlone });
    expect(warn.mock.calls).toEqual([[{ size: 1 }, 'a window of tontine contributions failed as a whole: they run again one by one']]);
  });

  // Two connections: real PostgreSQL only.
  it.runIf(databaseKind() === 'postgres')(
    "a contribution decided before another committed meets the cycle's paid count: it runs again alone, sees it, and as the last pays the pot",
    { timeout: 30_000 },
    async () => {
      const [organizer, member] = (await members(2)) as [TestUser, TestUser];
      const tontine = await tontineThroughService(tontines, [organizer, member]);
      // The organizer pays alone and holds its transaction; the window reads the tontine meanwhile
      // (the organizer's payment not committed: the member's is decided as not the last), then
      // waits for the pool's lock.
      const held = gate();
      const paid = gate();
      const first = withTransaction(knex, async (trx) => {
        await tontines.contribute(trx, { userId: organizer.id }, tontine.id, { cycle: 1 });
        paid.open();
        await held.opened;
      });
      await paid.opened;
      const last = tontines.window.runWindow([submission(member, tontine.id, 1)]);
      await untilWaitingForLock(knex, '%write_apply_batch(%');
      held.open();
      await first;
      const [answer] = await last;
      expect(answer && 'after' in answer ? answer.after.tontine.current_cycle : answer).toBe(2);
      expect(await payouts(tontine.id)).toBe(1);
      expect(await poolBalance(tontine.id)).toBe(0n);
      expect(await knex('tontines').where({ id: tontine.id }).first('current_cycle', 'paid_in_cycle')).toEqual({ current_cycle: 2, paid_in_cycle: 0 });
      expect(await count('tontine_contributions', { tontine_id: tontine.id, cycle_number: 1, status: 'paid' })).toBe(2);
    },
  );
});
