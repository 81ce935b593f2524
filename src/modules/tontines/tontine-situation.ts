import { TontineNotFoundError } from './tontine-errors';
import type { TontineRole, TontineSituation } from './tontine-lifecycle';
import type { Contribution, Member, Tontine, TontineRepository } from './tontine-repository';

/** The caller's situation from rows already read: the members and the caller's contribution to the open cycle. */
export async function situationFrom(
  repo: TontineRepository,
  tontine: Tontine,
  userId: string,
  members: readonly Member[],
  own: Contribution | undefined,
  requested?: { cycle: number; contribution: Contribution | undefined },
): Promise<TontineSituation> {
  const member = members.find((m) => m.userId === userId);
  let role: TontineRole;
  if (member) role = member.role;
  else if (tontine.status === 'forming' && (await repo.hasOpenInvitation(tontine.id, userId))) role = 'invited';
  else throw new TontineNotFoundError();
  const isPaid = (contribution: Contribution | undefined) => contribution !== undefined && contribution.status !== 'pending' && contribution.status !== 'late';
  return {
    ...situationOf(tontine, members, role),
    paidCurrentCycle: isPaid(member ? own : undefined),
    ...(requested === undefined ? {} : { requestedCycle: requested.cycle, paidRequestedCycle: isPaid(member ? requested.contribution : undefined) }),
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
