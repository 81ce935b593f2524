import { post, walletRefusal, walletsOf, type LedgerAccount, type Posting } from '../ledger';
import { cycleDrawKey, drawBeneficiary } from './tontine-draw';
import { statusAfter } from './tontine-lifecycle';
import type { Contribution, Tontine } from './tontine-repository';
import type { TontineScope } from './tontine-scope';
import type { TontineState } from './tontine-state';

/**
 * The money of a tontine (see TontineService): a contribution moves from the member's wallet
 * to the pool; the cycle's last one pays the whole pot out, in the same transaction.
 *
 * Nothing is read again: what the change needs was read with the caller's situation under the
 * tontine's lock (TontineState), and the tontine and its state after the change are worked
 * out here from what the change wrote (the pool's balance as the posting left it).
 */

/** The tontine after a contribution, and the contribution paid. */
export interface ContributionResult {
  contributionId: string;
  tontine: Tontine;
  state: TontineState;
}

/** Who the cycle's pot goes to, and whether they were drawn now (a random tontine draws when the pot is complete). */
interface Payout {
  beneficiaryUserId: string;
  drawnAmong?: string[];
}

/** Moves the contribution into the pool; pays the pot out when it was the cycle's last. */
export async function payContribution({ trx, repo, events, tontine, situation, state }: TontineScope, userId: string, at: Date): Promise<ContributionResult> {
  const cycle = tontine.currentCycle;
  const contribution = state.currentContributions.find((k) => k.userId === userId);
  if (!contribution) throw new Error(`no contribution row for member ${userId} in cycle ${cycle} of tontine ${tontine.id}`);
  // The cycle's last unpaid contribution (the lifecycle let only an unpaid one through) pays the pot out.
  const unpaid = (k: Contribution) => k.status === 'pending' || k.status === 'late';
  const payout = state.currentContributions.some((k) => k.id !== contribution.id && unpaid(k)) ? undefined : payoutOf(tontine, state);
  const wallets = await walletsOf(trx, payout ? [userId, payout.beneficiaryUserId] : [userId], tontine.currency);
  const wallet = wallets.get(userId) as LedgerAccount;
  const posting = await post(trx, {
    kind: 'tontine.contribution',
    reference: contribution.id,
    metadata: { tontine_id: tontine.id, cycle, user_id: userId },
    entries: [
      { accountId: wallet.id, amountMinor: -tontine.contributionMinor },
      { accountId: tontine.poolAccountId, amountMinor: tontine.contributionMinor },
    ],
  }).catch((error: unknown) => {
    throw walletRefusal(error, { parties: new Map([[wallet.id, 'sender']]), defaultParty: 'sender', covers: 'this contribution' });
  });
  await repo.markPaid(contribution.id, posting.id, at);
  await events.record({
    subjectType: 'tontine',
    subjectId: tontine.id,
    type: 'tontine.contribution_paid',
    actorUserId: userId,
    payload: { cycle, user_id: userId, amount_minor: tontine.contributionMinor.toString(), posting_id: posting.id, late: contribution.status === 'late' },
    occurredAt: at,
  });
  const paid: Contribution = { ...contribution, status: 'paid', postingId: posting.id, paidAt: at };
  const swap = (list: Contribution[]) => list.map((k) => (k.id === paid.id ? paid : k));
  const afterPayment: TontineState = {
    ...state,
    paidByCycle: new Map(state.paidByCycle).set(cycle, (state.paidByCycle.get(cycle) ?? 0) + 1),
    currentContributions: swap(state.currentContributions),
    ownContributions: swap(state.ownContributions),
    poolBalanceMinor: balanceAfter(posting, tontine.poolAccountId),
  };
  if (!payout) return { contributionId: contribution.id, tontine, state: afterPayment };
  const after = await payOut({ trx, repo, events, tontine, situation, state: afterPayment }, userId, payout, wallets.get(payout.beneficiaryUserId) as LedgerAccount, at);
  return { contributionId: contribution.id, ...after };
}

/** The cycle's beneficiary: named at the start (join order), or drawn now among the members who have not received a pot yet. */
function payoutOf(tontine: Tontine, state: TontineState): Payout {
  const current = state.cycles.find((c) => c.number === tontine.currentCycle);
  if (!current) throw new Error(`tontine ${tontine.id} has no cycle ${tontine.currentCycle}`);
  if (current.beneficiaryUserId !== null) return { beneficiaryUserId: current.beneficiaryUserId };
  const received = new Set(state.cycles.flatMap((c) => (c.beneficiaryUserId === null ? [] : [c.beneficiaryUserId])));
  const waiting = state.members.map((m) => m.userId).filter((userId) => !received.has(userId));
  return { beneficiaryUserId: drawBeneficiary(tontine.drawSeed, tontine.currentCycle, waiting), drawnAmong: waiting };
}

function balanceAfter(posting: Posting, accountId: string): bigint {
  const balance = posting.balancesAfter.get(accountId);
  if (balance === undefined) throw new Error(`posting ${posting.id} did not report the balance of account ${accountId}`);
  return balance;
}

/** The whole pot to the cycle's beneficiary, exactly once; then the next cycle, or the end. `state` is the one after the payment. */
async function payOut({ trx, repo, events, tontine, situation, state }: TontineScope, userId: string, payout: Payout, wallet: LedgerAccount, at: Date): Promise<Omit<ContributionResult, 'contributionId'>> {
  const cycle = tontine.currentCycle;
  const pot = tontine.contributionMinor * BigInt(state.cycles.length);
  const { beneficiaryUserId, drawnAmong } = payout;
  if (drawnAmong) {
    await events.record({
      subjectType: 'tontine',
      subjectId: tontine.id,
      type: 'tontine.beneficiary_drawn',
      actorUserId: null,
      payload: { cycle, beneficiary_user_id: beneficiaryUserId, draw_key: cycleDrawKey(tontine.drawSeed, cycle, beneficiaryUserId), candidates: drawnAmong },
      occurredAt: at,
    });
  }
  const posting = await post(
    trx,
    {
      kind: 'tontine.payout',
      reference: `${tontine.id}:${cycle}`,
      metadata: { tontine_id: tontine.id, cycle, user_id: beneficiaryUserId },
      entries: [
        { accountId: tontine.poolAccountId, amountMinor: -pot },
        { accountId: wallet.id, amountMinor: pot },
      ],
    },
    // The pot is owed to the beneficiary: a frozen wallet still receives it.
    { allowFrozen: true },
  );
  await repo.markCyclePaidOut(tontine.id, cycle, posting.id, at, drawnAmong ? beneficiaryUserId : undefined);
  await events.record({
    subjectType: 'tontine',
    subjectId: tontine.id,
    type: 'tontine.payout_made',
    actorUserId: null,
    payload: { cycle, beneficiary_user_id: beneficiaryUserId, amount_minor: pot.toString(), posting_id: posting.id },
    occurredAt: at,
  });
  const paidOut: TontineState = {
    ...state,
    // A drawn beneficiary's payout position is the cycle (as the draw recorded it).
    members: drawnAmong ? state.members.map((m) => (m.userId === beneficiaryUserId ? { ...m, payoutPosition: cycle } : m)) : state.members,
    cycles: state.cycles.map((c) => (c.number === cycle ? { ...c, beneficiaryUserId, status: 'paid_out', payoutPostingId: posting.id, paidOutAt: at } : c)),
    poolBalanceMinor: balanceAfter(posting, tontine.poolAccountId),
  };
  const next = state.cycles.find((c) => c.number === cycle + 1);
  if (next) {
    const opened = await repo.advanceToCycle(
      tontine.id,
      next.number,
      state.members.map((member) => member.userId),
    );
    await events.record({ subjectType: 'tontine', subjectId: tontine.id, type: 'tontine.cycle_opened', actorUserId: null, payload: { cycle: next.number, due_at: next.dueAt.toISOString() }, occurredAt: at });
    const cycles = paidOut.cycles.map((c) => (c.number === next.number ? { ...c, status: 'open' as const } : c));
    const ownContributions = [...paidOut.ownContributions, ...opened.filter((k) => k.userId === userId)];
    return { tontine: { ...tontine, currentCycle: next.number }, state: { ...paidOut, cycles, currentContributions: opened, ownContributions } };
  }
  const completed: Tontine = { ...tontine, status: statusAfter(situation, 'contribute', { completesTontine: true }), completedAt: at };
  await repo.update(tontine.id, { status: completed.status, completedAt: completed.completedAt });
  await events.record({ subjectType: 'tontine', subjectId: tontine.id, type: 'tontine.completed', actorUserId: null, payload: { cycles: state.cycles.length }, occurredAt: at });
  return { tontine: completed, state: paidOut };
}
