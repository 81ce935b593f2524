import { holdPayout, payoutState } from '../held-payouts';
import type { DecidedEvent, PlannedPosting, RowChange } from '../writes';
import { cycleDrawKey } from './tontine-draw';
import { statusAfter, type TontineSituation } from './tontine-lifecycle';
import { completesCycle, contributionPosting, payoutOf, payoutPosting, potOf, type TontineInLedger } from './tontine-postings';
import type { Contribution, Tontine, TontineState } from './tontine-rows';

/**
 * A contribution decided in memory (see TontineService.contribute), from what one statement
 * read under the tontine's lock: its postings (tontine-postings.ts), the rows it changes, its
 * events (without their object: the caller adds the tontine after it), and the tontine and its
 * state after it, so nothing is read again. The cycle's last contribution also pays the pot out
 * and opens the next cycle (its contributions inserted, with ids chosen here), or completes the
 * tontine. Posting ids are the database's: rows and event payloads name them by index.
 */

/** An event of the contribution, before its object (the tontine after the whole change) is added. */
export type ContributionEvent = Omit<DecidedEvent, 'object' | 'previousStatus'>;

export interface ContributionChange {
  contributionId: string;
  postings: PlannedPosting[];
  changes: RowChange[];
  events: ContributionEvent[];
  /** The tontine and its state after the change (without the postings' ids, the database's: no view shows them). */
  tontine: Tontine;
  state: TontineState;
  /** The cycle's last contribution: the same change with the pot held instead, and whose limits hold it. */
  held?: { change: ContributionChange; beneficiaryUserId: string };
}

/**
 * The change guarded by the count of contributions paid to the running cycle
 * (tontines.paid_in_cycle, read with the row): it applies only while the tontine is still active
 * in the cycle read with the count read, and counts itself (0 again once the next cycle opens).
 * Two contributions decided from the same read (unlocked: a window's) can then never both
 * apply, so the cycle's last contribution is always decided as the last, and pays the pot out.
 */
export function countedChange(change: ContributionChange, before: Tontine): ContributionChange {
  const paidInCycle = change.tontine.currentCycle === before.currentCycle ? before.paidInCycle + 1 : 0;
  const guard: RowChange = {
    table: 'tontines',
    id: before.id,
    expect: { status: before.status, current_cycle: before.currentCycle, paid_in_cycle: before.paidInCycle },
    set: { paid_in_cycle: paidInCycle },
  };
  const counted = (decided: ContributionChange): ContributionChange => ({ ...decided, changes: [guard, ...decided.changes], tontine: { ...decided.tontine, paidInCycle } });
  return { ...counted(change), ...(change.held ? { held: { ...change.held, change: counted(change.held.change) } } : {}) };
}

/** Where a payout's posting sits in the decision: after the contribution's. */
const CONTRIBUTION_POSTING = 0;
const PAYOUT_POSTING = 1;

/** The caller's contribution to the open cycle, and the payout when it is the cycle's last (`newId` names the next cycle's contributions). */
export function contributionChange(
  locked: { tontine: Tontine; state: TontineState },
  situation: TontineSituation,
  userId: string,
  at: Date,
  newId: () => string,
): ContributionChange {
  const { tontine, state } = locked;
  const cycle = tontine.currentCycle;
  const inLedger = { tontine, members: state.members, cycles: state.cycles, currentContributions: state.currentContributions };
  const contribution = state.currentContributions.find((k) => k.userId === userId);
  if (!contribution) throw new Error(`no contribution row for member ${userId} in cycle ${cycle} of tontine ${tontine.id}`);
  const event = (type: string, actorUserId: string | null, payload: Record<string, unknown>, postingIds?: Record<string, number>): ContributionEvent => ({
    subjectType: 'tontine',
    subjectId: tontine.id,
    type,
    actorUserId,
    payload,
    occurredAt: at,
    ...(postingIds ? { postingIds } : {}),
  });
  const paid: Contribution = { ...contribution, status: 'paid', postingId: null, paidAt: at };
  const swap = (list: Contribution[]) => list.map((k) => (k.id === paid.id ? paid : k));
  const afterPayment: TontineState = {
    ...state,
    paidByCycle: new Map(state.paidByCycle).set(cycle, (state.paidByCycle.get(cycle) ?? 0) + 1),
    currentContributions: swap(state.currentContributions),
    ownContributions: swap(state.ownContributions),
    poolBalanceMinor: state.poolBalanceMinor + tontine.contributionMinor,
  };
  const paying: ContributionChange = {
    contributionId: contribution.id,
    postings: [contributionPosting(inLedger, contribution)],
    changes: [
      {
        table: 'tontine_contributions',
        id: contribution.id,
        expect: { status: contribution.status },
        set: { status: 'paid', paid_at: at.toISOString() },
        postingIds: { posting_id: CONTRIBUTION_POSTING },
      },
    ],
    events: [
      event(
        'tontine.contribution_paid',
        userId,
        { cycle, user_id: userId, amount_minor: tontine.contributionMinor.toString(), late: contribution.status === 'late' },
        { posting_id: CONTRIBUTION_POSTING },
      ),
    ],
    tontine,
    state: afterPayment,
  };
  if (!completesCycle(inLedger, userId)) return paying;
  return payOut(paying, { inLedger, situation, userId, at, newId, event });
}

/** What the payout of a cycle's last contribution is decided with, besides the contribution's own change. */
interface PayoutContext {
  inLedger: TontineInLedger;
  situation: TontineSituation;
  userId: string;
  at: Date;
  newId: () => string;
  event: (type: string, actorUserId: string | null, payload: Record<string, unknown>, postingIds?: Record<string, number>) => ContributionEvent;
}

/**
 * The whole pot to the cycle's beneficiary, then the next cycle or the end: added to `paying`
 * (the change of the cycle's last contribution). Alongside, `held`: the same change with the pot
 * held for verification instead (the ledger applies it when the beneficiary's limits refuse the
 * pot: the pot stays in the pool, the cycle `paid_out` with its held payout, `tontine.payout_held`).
 */
function payOut(paying: ContributionChange, { inLedger, situation, userId, at, newId, event }: PayoutContext): ContributionChange {
  const { tontine, state } = paying;
  const cycle = tontine.currentCycle;
  const { beneficiaryUserId, drawnAmong } = payoutOf(inLedger);
  const pot = potOf(inLedger);
  const cycleKey = (number: number) => ({ tontine_id: tontine.id, number });
  const drawn = {
    changes: drawnAmong ? [{ table: 'tontine_members' as const, key: { tontine_id: tontine.id, user_id: beneficiaryUserId }, set: { payout_position: cycle } }] : [],
    events: drawnAmong
      ? [event('tontine.beneficiary_drawn', null, { cycle, beneficiary_user_id: beneficiaryUserId, draw_key: cycleDrawKey(tontine.drawSeed, cycle, beneficiaryUserId), candidates: drawnAmong })]
      : [],
    members: drawnAmong ? state.members.map((m) => (m.userId === beneficiaryUserId ? { ...m, payoutPosition: cycle } : m)) : state.members,
  };
  const beneficiary = drawnAmong ? { beneficiary_user_id: beneficiaryUserId } : {};
  // A drawn beneficiary's payout position is the cycle.
  const paid = then(paying, {
    postings: [...paying.postings, payoutPosting(inLedger, beneficiaryUserId)],
    changes: [
      { table: 'tontine_cycles', key: cycleKey(cycle), expect: { status: 'open' }, set: { status: 'paid_out', paid_out_at: at.toISOString(), ...beneficiary }, postingIds: { payout_posting_id: PAYOUT_POSTING } },
      ...drawn.changes,
    ],
    events: [...drawn.events, event('tontine.payout_made', null, { cycle, beneficiary_user_id: beneficiaryUserId, amount_minor: pot.toString() }, { posting_id: PAYOUT_POSTING })],
    state: {
      ...state,
      members: drawn.members,
      cycles: state.cycles.map((c) => (c.number === cycle ? { ...c, beneficiaryUserId, status: 'paid_out', payoutPostingId: null, paidOutAt: at } : c)),
      poolBalanceMinor: state.poolBalanceMinor - pot,
    },
  });
  // The next cycle's contributions take their ids first, then the held payout.
  const next = nextOrEnd(paying, situation, userId, at, newId);
  const hold = holdPayout({ id: newId(), subjectType: 'tontine', subjectId: tontine.id, cycleNumber: cycle, recipientUserId: beneficiaryUserId, currency: tontine.currency, amountMinor: pot, at });
  const held = then(paying, {
    postings: paying.postings,
    changes: [hold.change, { table: 'tontine_cycles', key: cycleKey(cycle), expect: { status: 'open' }, set: { status: 'paid_out', held_payout_id: hold.row.id, ...beneficiary } }, ...drawn.changes],
    events: [...drawn.events, event('tontine.payout_held', null, { cycle, beneficiary_user_id: beneficiaryUserId, amount_minor: pot.toString(), held_payout_id: hold.row.id, reason: hold.row.reason })],
    state: {
      ...state,
      members: drawn.members,
      cycles: state.cycles.map((c) => (c.number === cycle ? { ...c, beneficiaryUserId, status: 'paid_out', payoutPostingId: null, paidOutAt: null, payout: payoutState(hold.row) } : c)),
    },
  });
  return { ...next(paid), held: { change: next(held), beneficiaryUserId } };
}

/** The change of the cycle's last contribution, with what its payout (made or held) adds. */
function then(paying: ContributionChange, payout: Pick<ContributionChange, 'postings' | 'changes' | 'events' | 'state'>): ContributionChange {
  return { ...paying, postings: payout.postings, changes: [...paying.changes, ...payout.changes], events: [...paying.events, ...payout.events], state: payout.state };
}

/** After the payout: the next cycle opened (its contributions inserted, with ids from `newId`), or the tontine completed. */
function nextOrEnd(paying: ContributionChange, situation: TontineSituation, userId: string, at: Date, newId: () => string): (change: ContributionChange) => ContributionChange {
  const { tontine, state } = paying;
  const cycle = tontine.currentCycle;
  const running = { status: 'active', current_cycle: cycle };
  const event = (type: string, payload: Record<string, unknown>): ContributionEvent => ({ subjectType: 'tontine', subjectId: tontine.id, type, actorUserId: null, payload, occurredAt: at });
  const next = state.cycles.find((c) => c.number === cycle + 1);
  if (next) {
    const opened: Contribution[] = state.members.map((member) => ({ id: newId(), cycleNumber: next.number, userId: member.userId, status: 'pending', postingId: null, paidAt: null }));
    return (change) => ({
      ...change,
      changes: [
        ...change.changes,
        { table: 'tontine_cycles', key: { tontine_id: tontine.id, number: next.number }, expect: { status: 'upcoming' }, set: { status: 'open' } },
        { table: 'tontines', id: tontine.id, expect: running, set: { current_cycle: next.number } },
        ...opened.map((k): RowChange => ({ table: 'tontine_contributions', op: 'insert', id: k.id, set: { tontine_id: tontine.id, cycle_number: k.cycleNumber, user_id: k.userId } })),
      ],
      events: [...change.events, event('tontine.cycle_opened', { cycle: next.number, due_at: next.dueAt.toISOString() })],
      tontine: { ...tontine, currentCycle: next.number },
      state: {
        ...change.state,
        cycles: change.state.cycles.map((c) => (c.number === next.number ? { ...c, status: 'open' as const } : c)),
        currentContributions: opened,
        ownContributions: [...change.state.ownContributions, ...opened.filter((k) => k.userId === userId)],
      },
    });
  }
  const completed: Tontine = { ...tontine, status: statusAfter(situation, 'contribute', { completesTontine: true }), completedAt: at };
  return (change) => ({
    ...change,
    changes: [...change.changes, { table: 'tontines', id: tontine.id, expect: running, set: { status: completed.status, completed_at: at.toISOString() } }],
    events: [...change.events, event('tontine.completed', { cycles: state.cycles.length })],
    tontine: completed,
  });
}
