import { TontineNotFoundError } from './tontine-errors';
import type { TontineRole, TontineSituation } from './tontine-lifecycle';
import type { Contribution, Member, Tontine, TontineState } from './tontine-rows';

/**
 * The caller's situation from the state read (404 when the caller may not see the tontine):
 * a member, or else, while it forms, a holder of an open invitation. `requestedCycle` is the
 * cycle a contribution names.
 */
export function situationFrom(tontine: Tontine, userId: string, state: TontineState, requestedCycle?: number): TontineSituation {
  const member = state.members.find((m) => m.userId === userId);
  let role: TontineRole;
  if (member) role = member.role;
  else if (tontine.status === 'forming' && state.invited) role = 'invited';
  else throw new TontineNotFoundError();
  const ownIn = (cycle: number) => (member && cycle > 0 ? state.ownContributions.find((k) => k.cycleNumber === cycle) : undefined);
  const isPaid = (contribution: Contribution | undefined) => contribution !== undefined && contribution.status !== 'pending' && contribution.status !== 'late';
  return {
    ...situationOf(tontine, state.members, role),
    paidCurrentCycle: isPaid(ownIn(tontine.currentCycle)),
    ...(requestedCycle === undefined ? {} : { requestedCycle, paidRequestedCycle: isPaid(ownIn(requestedCycle)) }),
  };
}

/** The situation of someone who is not a member (a member who just left, a platform administrator), from the members read. */
export function outsiderSituationFrom(tontine: Tontine, members: readonly Member[], role: 'former_member' | 'administrator'): TontineSituation {
  return situationOf(tontine, members, role);
}

/** What every situation reads off the tontine and its members; the caller's payment is not yet counted. */
function situationOf(tontine: Tontine, members: readonly Member[], role: TontineRole): TontineSituation {
  return {
    status: tontine.status,
    role,
    memberCount: members.length,
    maxMembers: tontine.maxMembers,
    currentCycle: tontine.currentCycle,
    paidCurrentCycle: false,
    payoutMade: payoutMade(tontine),
  };
}

/** Whether a pot has been paid out: each payout opens the next cycle (or completes the tontine) in its transaction. */
function payoutMade(tontine: Tontine): boolean {
  return tontine.status === 'completed' || tontine.currentCycle > 1;
}
