import crypto from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { ConflictError, NotFoundError } from '../../src/errors';
import { EscrowService, escrowStatusOf } from '../../src/modules/escrows';
import { CompletedByThisRequest, IdempotencyService, requestHash, type PendingKey } from '../../src/modules/idempotency';
import { DecisionWindow, type Decision, type WindowDecided, type WindowDecider } from '../../src/modules/writes';
import { testKnex } from '../support/database';
import { escrowThroughService } from '../support/escrows';
import { createUser, type TestUser } from '../support/factories';

/**
 * The window itself (DecisionWindow), with a decider of its own: decisions that write nothing
 * but the key's completion, refusals decided from the read, anything else a decider throws, a
 * decision whose row changed before it was applied, a key the window did not claim, and a
 * first run that committed unanswered. Each request gets its own answer, in order.
 */
const knex = testKnex();
const idempotency = new IdempotencyService(knex, { ttlHours: 24 });
idempotency.registerResourceStatus('escrow', escrowStatusOf);
const escrows = new EscrowService({ knex, feeBps: 100, clock: () => new Date() });

/** What the test decider does with a submission. */
type Plan = 'decide' | 'refuse' | 'throw' | 'stale' | 'completed_before';

interface Thing {
  key: PendingKey;
  id: string;
  plan: Plan;
  /** An escrow whose row a `stale` decision expects in a status it is not in. */
  escrowId?: string;
}

const thing = (id: string) => ({ type: 'thing', id, status: 'made', location: `/things/${id}` });

/** A decider whose decisions write nothing but their key's completion; `alone` answers `alone <id>`. */
function thingDecider(options: { found?: boolean; count?: (n: number) => number } = {}): WindowDecider<Thing, string> & { alone: ReturnType<typeof vi.fn> } {
  const alone = vi.fn(async (_trx: unknown, submission: Thing) => {
    if (submission.plan === 'completed_before') throw new CompletedByThisRequest(submission.id);
    return `alone ${submission.id}`;
  });
  return {
    noun: 'test things',
    async decide(submissions) {
      const decided = submissions.map((submission): WindowDecided<string> => {
        if (submission.plan === 'refuse') return { refusal: new NotFoundError('No such thing.', 'ThingNotFound') };
        if (submission.plan === 'throw') return { refusal: new Error('the read of this thing failed') };
        const decision: Decision = {
          answer: { resource: thing(submission.id) },
          ...(submission.plan === 'stale' ? { changes: [{ table: 'escrows', id: submission.escrowId as string, expect: { status: 'delivered' }, set: { description: 'Changed' } }] } : {}),
        };
        return { decision, answer: (postingIds, applied) => `window ${submission.id} ${postingIds.length} postings, ${applied === decision ? 'as decided' : 'another'}` };
      });
      return decided.slice(0, options.count ? options.count(decided.length) : decided.length);
    },
    alone,
    async completed(resourceId) {
      return options.found ? { answer: `completed ${resourceId}`, resource: { type: 'thing', id: resourceId, status: 'made' } } : undefined;
    },
  };
}

function submission(user: TestUser, plan: Plan, key = crypto.randomUUID(), escrowId?: string): Thing {
  return {
    key: idempotency.pendingKey({ userId: user.id, operation: 'makeThing', key, requestHash: requestHash({ body: { plan } }) }, 201),
    id: crypto.randomUUID(),
    plan,
    ...(escrowId ? { escrowId } : {}),
  };
}

const keyRow = (user: TestUser) => knex('idempotency_keys').where({ user_id: user.id }).select('status', 'resource_type', 'resource_id', 'resource_status', 'response_status');

describe('a decision window', () => {
  it('answers each request in order: a decision applied as decided (its key completed), a refusal once its key is claimed, anything else the decider threw run alone', async () => {
    const user = await createUser();
    const decider = thingDecider();
    const window = new DecisionWindow(knex, decider, () => new Date(), undefined, undefined);
    const made = submission(user, 'decide');
    const refused = submission(user, 'refuse');
    const threw = submission(user, 'throw');
    const answers = await window.runWindow([made, refused, threw]);
    expect(answers[0]).toEqual({ after: `window ${made.id} 0 postings, as decided` });
    expect(answers[1]).toMatchObject({ error: { code: 'ThingNotFound', message: 'No such thing.' } });
    expect(answers[2]).toEqual({ after: `alone ${threw.id}` });
    expect(decider.alone).toHaveBeenCalledTimes(1);
    expect(made.key.completedWith).toEqual({ responseStatus: 201, resourceType: 'thing', resourceId: made.id, resourceStatus: 'made' });
    // Only the decision completed its key: the refusal's was released, and what ran alone claimed none here.
    expect(await keyRow(user)).toEqual([{ status: 'completed', resource_type: 'thing', resource_id: made.id, resource_status: 'made', response_status: 201 }]);
  });

  it('runs alone a decision whose row changed before it was applied (WRT02), and one whose key the window did not claim (a replay)', async () => {
    const user = await createUser();
    const { id: escrowId } = await escrowThroughService(escrows, { buyerBalance: 0n, input: { description: 'Stale' } });
    const decider = thingDecider();
    const window = new DecisionWindow(knex, decider, () => new Date(), undefined, undefined);
    const stale = submission(user, 'stale', crypto.randomUUID(), escrowId);
    const key = crypto.randomUUID();
    const first = submission(user, 'decide', key);
    const replay = submission(user, 'decide', key);
    const answers = await window.runWindow([stale, first, replay]);
    expect(answers).toEqual([{ after: `alone ${stale.id}` }, { after: `window ${first.id} 0 postings, as decided` }, { after: `alone ${replay.id}` }]);
    expect(decider.alone.mock.calls.map(([, ran]) => (ran as Thing).id)).toEqual([stale.id, replay.id]);
    expect(await knex('escrows').where({ id: escrowId }).first('description')).toEqual({ description: 'Stale' });
  });

  it('answers a request whose first run committed unanswered with what it made, its key completed with it; or with the error when the decider finds nothing', async () => {
    const user = await createUser();
    const found = submission(user, 'completed_before');
    expect(await new DecisionWindow(knex, thingDecider({ found: true }), () => new Date(), undefined, undefined).runAlone(found)).toEqual({ after: `completed ${found.id}` });
    expect(found.key.completedWith).toEqual({ responseStatus: 201, resourceType: 'thing', resourceId: found.id, resourceStatus: 'made' });
    const lost = submission(user, 'completed_before');
    const answer = await new DecisionWindow(knex, thingDecider({ found: false }), () => new Date(), undefined, undefined).runAlone(lost);
    expect(answer).toEqual({ error: expect.any(CompletedByThisRequest) });
    expect(lost.key.completedWith).toBeUndefined();
  });

  it('runs a request alone again on a new connection when the connection fails under it (injected), not for another error', async () => {
    const user = await createUser();
    const decider = thingDecider();
    const window = new DecisionWindow(knex, decider, () => new Date(), undefined, undefined);
    const transaction = knex.transaction.bind(knex);
    let failures = 1;
    const lost = vi.spyOn(knex, 'transaction').mockImplementation(((...args: Parameters<typeof knex.transaction>) => {
      if (failures > 0) {
        failures -= 1;
        return Promise.reject(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }));
      }
      return (transaction as (...a: unknown[]) => unknown)(...args);
    }) as never);
    const one = submission(user, 'decide');
    try {
      expect(await window.runAlone(one)).toEqual({ after: `alone ${one.id}` });
    } finally {
      lost.mockRestore();
    }
    expect(failures).toBe(0);
    const refused = vi.spyOn(knex, 'transaction').mockRejectedValue(Object.assign(new Error('check constraint'), { code: '23514' }));
    try {
      expect(await window.runAlone(submission(user, 'decide'))).toEqual({ error: expect.objectContaining({ code: '23514' }) });
      expect(refused).toHaveBeenCalledTimes(1);
    } finally {
      refused.mockRestore();
    }
    expect(decider.alone).toHaveBeenCalledTimes(1);
  });

  it('refuses a decider that answers another number of decisions than submissions; through the group commit, that window fails as a whole, said once, and each request runs alone', async () => {
    const user = await createUser();
    const short = thingDecider({ count: (n) => n - 1 });
    const window = new DecisionWindow(knex, short, () => new Date(), undefined, undefined);
    await expect(window.runWindow([submission(user, 'decide'), submission(user, 'decide')])).rejects.toThrow('the test things decider answered 1 decisions for 2 submissions');
    const warn = vi.fn();
    const grouped = new DecisionWindow(knex, thingDecider({ count: () => 0 }), () => new Date(), { warn }, { windowMs: 1, maxItems: 64 });
    const one = submission(user, 'decide');
    expect(await grouped.submit(one)).toEqual({ after: `alone ${one.id}` });
    expect(warn.mock.calls).toEqual([[{ size: 1 }, 'a window of test things failed as a whole: they run again one by one']]);
  });

  it('says nothing of a window that applied', async () => {
    const user = await createUser();
    const warn = vi.fn();
    const window = new DecisionWindow(knex, thingDecider(), () => new Date(), { warn }, { windowMs: 1, maxItems: 64 });
    const made = submission(user, 'decide');
    expect(await window.submit(made)).toEqual({ after: `window ${made.id} 0 postings, as decided` });
    expect(warn).not.toHaveBeenCalled();
  });
});

describe('an escrow action run again by the same request (a fault hid its commit)', () => {
  it('answers the escrow as it is now, its key completed with it; another request with the same key gets 409', async () => {
    const { id, buyer } = await escrowThroughService(escrows, { buyerBalance: 100_000n, input: { description: 'Run again' } });
    const key = crypto.randomUUID();
    const pending = () => idempotency.pendingKey({ userId: buyer.id, operation: 'fundEscrow', key, requestHash: requestHash({ path: { escrowId: id } }) }, 200);
    const fund = { caller: { userId: buyer.id, isAdmin: false }, escrowId: id, action: 'fund' as const, key: pending() };
    const [made] = await escrows.window.runWindow([fund]);
    expect(made && 'after' in made ? made.after.escrow.status : made).toBe('funded');
    const again = await escrows.window.runAlone(fund);
    expect(again && 'after' in again ? { id: again.after.escrow.id, status: again.after.escrow.status, history: again.after.history.map((entry) => entry.type) } : again).toEqual({
      id,
      status: 'funded',
      history: ['escrow.created', 'escrow.funded'],
    });
    expect(fund.key.completedWith).toEqual({ responseStatus: 200, resourceType: 'escrow', resourceId: id, resourceStatus: 'funded' });
    const replay = await escrows.window.runAlone({ ...fund, key: pending() });
    expect(replay).toEqual({ error: expect.any(ConflictError) });
    expect(replay).toMatchObject({ error: { code: 'IdempotencyKeyAlreadyProcessed', details: { resource_type: 'escrow', resource_id: id, status: 'funded' } } });
    expect(await knex('postings').where({ kind: 'escrow.funding', reference: id }).count<Array<{ n: string }>>({ n: '*' })).toEqual([{ n: '1' }]);
  });
});
