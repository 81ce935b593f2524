import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Caller, IdempotentResource } from '../../contract';
import type { PendingKey } from '../idempotency';
import { currencies, walletRefusal, type WalletPosting } from '../ledger';
import { applyPayoutDecision, type CompletedResource, type Decision, type WindowDecided, type WindowDecider } from '../writes';
import { TontineNotFoundError } from './tontine-errors';
import { assertAllowed } from './tontine-lifecycle';
import { contributionChange, countedChange, type ContributionChange } from './tontine-contributions';
import type { TontineView } from './tontine-presenter';
import { TontineRepository } from './tontine-repository';
import { toTontine, type Tontine, type TontineRow, type TontineState } from './tontine-rows';
import { situationFrom } from './tontine-situation';
import { describeState, stateFromColumn } from './tontine-state';

/** The resource a contribution's Idempotency-Key names (a replay reports its current status). */
export const CONTRIBUTION_RESOURCE = 'tontine_contribution';

/** A contribution asked for, with the Idempotency-Key the pipeline handed over. */
export interface ContributionSubmission {
  caller: Pick<Caller, 'userId'>;
  tontineId: string;
  body: { cycle: number };
  key: PendingKey;
}

/** What a contribution answers: the tontine after it, as the caller sees it, and the contribution paid. */
export interface Contributed {
  tontine: TontineView;
  contributionId: string;
}

/** A tontine with its state as one member sees it. */
type Read = { tontine: Tontine; state: TontineState };

/** A contribution decided (nothing written): its decision, its answers (made, or with the pot held), and the tontine after it. */
interface DecidedContribution {
  decision: Decision;
  answer(held: boolean): Contributed;
  after: Read;
}

/** How a contribution's refusal names the wallet: the member's own (the payout reaches even a frozen wallet). */
const CONTRIBUTION_PARTIES: WalletPosting = { parties: new Map(), defaultParty: 'sender', covers: 'this contribution' };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The contribution a contribution's Idempotency-Key names (a replay reports its status read afresh). */
function contributionResource(tontineId: string, contributionId: string): IdempotentResource {
  return { type: CONTRIBUTION_RESOURCE, id: contributionId, status: 'paid', location: `/api/tontines/${tontineId}` };
}

/**
 * The caller's contribution decided from the tontine read (undefined: none the caller may see):
 * the lifecycle and the posting plan decide in memory (contributionChange: the cycle's last
 * contribution also pays the pot out, or holds it, and opens the next cycle, or completes the
 * tontine), guarded by the count read (countedChange). Each event carries the tontine after the
 * whole change, built in memory.
 */
async function decideContribution(db: Knex | Knex.Transaction, read: Read | undefined, userId: string, body: { cycle: number }, now: Date): Promise<DecidedContribution> {
  if (!read) throw new TontineNotFoundError();
  const { tontine } = read;
  const situation = situationFrom(tontine, userId, read.state, body.cycle);
  assertAllowed(situation, 'contribute');
  const change = countedChange(contributionChange(read, situation, userId, now, () => crypto.randomUUID()), tontine);
  const { exponent } = await currencies.require(db, tontine.currency);
  const { view, object } = describeState(change.tontine, change.state, userId, exponent);
  const decision = (decided: ContributionChange, object: TontineView): Decision => ({
    postings: decided.postings,
    changes: decided.changes,
    // The status before: the tontine's for the first event, the one its predecessor in this change shows for the next ones.
    events: decided.events.map((event, index) => ({ ...event, object, previousStatus: index === 0 ? tontine.status : object.status })),
    answer: { resource: contributionResource(tontine.id, decided.contributionId) },
  });
  const held = change.held && describeState(change.held.change.tontine, change.held.change.state, userId, exponent);
  const hold = change.held && held ? { posting: change.postings.length - 1, ownerId: change.held.beneficiaryUserId, instead: decision(change.held.change, held.object) } : undefined;
  return {
    decision: { ...decision(change, object), ...(hold ? { holds: [hold] } : {}) },
    answer: (wasHeld) => ({ tontine: wasHeld && held ? held.view : view, contributionId: change.contributionId }),
    after: { tontine: change.tontine, state: change.state },
  };
}

/**
 * A contribution alone, in `trx` (the pipeline's key pending in it), on the one write path: one
 * statement claims the key and reads the tontine locked with its state; the decision
 * (decideContribution); one statement applies it (postings, rows, events, the key's completion).
 */
export async function contributeLocked(trx: Knex.Transaction, userId: string, tontineId: string, body: { cycle: number }, now: Date): Promise<Contributed> {
  const read = await new TontineRepository(trx).lockForDecision(tontineId, userId);
  const decided = await decideContribution(trx, read, userId, body, now);
  const applied = await applyPayoutDecision(trx, decided.decision).catch((error: unknown) => {
    throw walletRefusal(error, CONTRIBUTION_PARTIES);
  });
  return decided.answer(applied.held);
}

/**
 * Contributions in windows (DecisionWindow, src/modules/writes): each (tontine, member) of the
 * window read in ONE plain statement, the tontine's row with its state as that member sees it;
 * the contributions decided in arrival order, each to a tontine decided against the state the
 * window's earlier contributions to it leave (the tontine after them, as this member sees it),
 * guarded by the count of the cycle's payments (countedChange: the next contribution to it
 * expects the count the previous one leaves). A decision chained so applies only when the ones
 * before it did. After a contribution that completes a cycle (its pot paid, or held when the
 * beneficiary's limits refuse it: which one, only the apply knows) the window decides nothing
 * more of that tontine: its later contributions run alone, locked, as does a refusal decided
 * from a state the window's own decisions were to leave.
 */
export function tontineDecider(
  knex: Knex,
  rules: { alone(trx: Knex.Transaction, submission: ContributionSubmission): Promise<Contributed>; current(submission: ContributionSubmission): Promise<TontineView> },
): WindowDecider<ContributionSubmission, Contributed> {
  return {
    noun: 'tontine contributions',
    async decide(submissions, now) {
      const read = await readContributions(knex, submissions.map((submission) => ({ tontineId: submission.tontineId, userId: submission.caller.userId })));
      // Per tontine: the state the window's decisions so far leave, or 'alone' after a cycle's last contribution.
      const chained = new Map<string, Read | 'alone'>();
      const decided: Array<WindowDecided<Contributed>> = [];
      for (const submission of submissions) {
        const tontineId = submission.tontineId.toLowerCase();
        const { userId } = submission.caller;
        const before = chained.get(tontineId);
        if (before === 'alone') {
          decided.push({ refusal: new Error('a contribution after the window completed its cycle runs alone') });
          continue;
        }
        const own = read.get(`${tontineId}:${userId.toLowerCase()}`);
        try {
          const decision = await decideContribution(knex, before && own ? asSeenBy(before, own) : own, userId, submission.body, now);
          chained.set(tontineId, decision.decision.holds?.length ? 'alone' : decision.after);
          decided.push({ decision: decision.decision, answer: (_postingIds, applied) => decision.answer(applied !== decision.decision) });
        } catch (refusal) {
          // Refused by what the window's earlier decisions were to leave: decided again alone once they applied (or not).
          decided.push({ refusal: before ? new Error('a contribution refused on the window state runs alone') : refusal });
        }
      }
      return decided;
    },
    alone: (trx, submission) => rules.alone(trx, submission),
    async completed(resourceId, submission): Promise<CompletedResource<Contributed> | undefined> {
      const status = await new TontineRepository(knex).contributionStatus(resourceId);
      if (!status) return undefined;
      return { answer: { tontine: await rules.current(submission), contributionId: resourceId }, resource: { type: CONTRIBUTION_RESOURCE, id: resourceId, status } };
    },
  };
}

/**
 * The tontine the window's earlier contributions leave, as another member sees it: the same
 * cycle (the window stops deciding a tontine once a cycle completes), that member's own
 * contributions with the running cycle's as they then stand, and their own invitation.
 */
function asSeenBy(before: Read, own: Read): Read {
  const running = new Map(before.state.currentContributions.map((contribution) => [contribution.id, contribution]));
  return {
    tontine: before.tontine,
    state: { ...before.state, ownContributions: own.state.ownContributions.map((contribution) => running.get(contribution.id) ?? contribution), invited: own.state.invited },
  };
}

/** Each (tontine, member) pair's tontine row with its state as that member sees it, in one plain statement (nothing locked); by `<tontine id>:<user id>`. */
async function readContributions(knex: Knex, pairs: ReadonlyArray<{ tontineId: string; userId: string }>): Promise<Map<string, Read>> {
  const wanted = new Map(pairs.filter((pair) => UUID.test(pair.tontineId)).map((pair) => [`${pair.tontineId.toLowerCase()}:${pair.userId.toLowerCase()}`, { tontineId: pair.tontineId.toLowerCase(), userId: pair.userId.toLowerCase() }]));
  if (wanted.size === 0) return new Map();
  const result = (await knex.raw(
    `SELECT t.*, p.reader, tontine_state(t.id, t.current_cycle, p.reader, t.pool_account_id) AS state
       FROM unnest(?::uuid[], ?::uuid[]) AS p(tontine_id, reader) JOIN "tontines" t ON t.id = p.tontine_id`,
    [[...wanted.values()].map((pair) => pair.tontineId), [...wanted.values()].map((pair) => pair.userId)],
  )) as { rows: Array<TontineRow & { reader: string; state: unknown }> };
  return new Map(
    result.rows.map(({ reader, state, ...row }) => {
      const tontine = toTontine(row);
      return [`${tontine.id}:${reader}`, { tontine, state: stateFromColumn(state, tontine, reader) }];
    }),
  );
}
