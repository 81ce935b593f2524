import {
  AlreadyMemberError,
  ContributionAlreadyPaidError,
  CycleNotOpenError,
  InvalidTontineStateError,
  NotEnoughMembersError,
  NotTontineOrganizerError,
  OrganizerCannotLeaveError,
  TontineFullError,
  TontineNotFoundError,
} from './tontine-errors';
import type { TontineAction, TontineStatus } from './tontine-types';

export type { TontineAction, TontineStatus } from './tontine-types';

/**
 * `former_member`: only in the answer to leave, for the member who just left;
 * `administrator`: only in the answer to a platform administrator's dissolve.
 */
export type TontineRole = 'organizer' | 'member' | 'invited' | 'former_member' | 'administrator';
export type TontineFrequency = 'weekly' | 'biweekly' | 'monthly';
export type PayoutOrder = 'join_order' | 'random';

export const TONTINE_ACTIONS: readonly TontineAction[] = ['invite', 'join', 'leave', 'start', 'contribute', 'cancel'];

/** Who may do what, in which status: the whole lifecycle in one table. */
const RULES: Readonly<Record<TontineAction, { statuses: readonly TontineStatus[]; roles: readonly TontineRole[] }>> = {
  invite: { statuses: ['forming'], roles: ['organizer'] },
  join: { statuses: ['forming'], roles: ['invited'] },
  leave: { statuses: ['forming'], roles: ['member'] },
  start: { statuses: ['forming'], roles: ['organizer'] },
  contribute: { statuses: ['active'], roles: ['organizer', 'member'] },
  cancel: { statuses: ['forming', 'active'], roles: ['organizer'] },
};

/** What decides whether the caller may act: the tontine's state as seen by the caller. */
export interface TontineSituation {
  status: TontineStatus;
  role: TontineRole;
  memberCount: number;
  maxMembers: number;
  currentCycle: number;
  /** Whether the caller already paid the running cycle. */
  paidCurrentCycle: boolean;
  /** Whether any cycle's pot has been paid out: from then on no member can end the tontine. */
  payoutMade: boolean;
  /** The cycle a contribution names (`{"cycle": n}`), and whether the caller already paid that one. */
  requestedCycle?: number;
  paidRequestedCycle?: boolean;
}

/**
 * Why the caller may not do `action` now (a factory of the error the contract names), or
 * null when they may. Checked in this order: who the caller is (404 for member-only actions
 * of a non-member, 409 AlreadyMember, 422 OrganizerCannotLeave, 403 NotTontineOrganizer),
 * then the status (409 InvalidTontineState, also for a cancel once a pot was paid out), then
 * the action's own condition (room left, enough members, the named cycle open and not paid yet).
 */
function refusal(situation: TontineSituation, action: TontineAction): (() => Error) | null {
  const { role, status } = situation;
  const rule = RULES[action];
  if (action === 'join' && role !== 'invited') return () => new AlreadyMemberError();
  if ((action === 'leave' || action === 'contribute') && (role === 'invited' || role === 'former_member')) return () => new TontineNotFoundError();
  if (action === 'leave' && role === 'organizer') return () => new OrganizerCannotLeaveError();
  if (!rule.roles.includes(role)) return () => new NotTontineOrganizerError(action, role, allowedActions(situation));
  if (!rule.statuses.includes(status)) return () => new InvalidTontineStateError(status, action, allowedActions(situation));
  // After a payout, the members who already received a pot owe the others: nobody may walk away.
  if (action === 'cancel' && status === 'active' && situation.payoutMade) {
    return () =>
      new InvalidTontineStateError(
        status,
        action,
        allowedActions(situation),
        'A pot has already been paid out: no member can end this tontine any more (only a platform administrator can dissolve it).',
      );
  }
  if ((action === 'invite' || action === 'join') && situation.memberCount >= situation.maxMembers) return () => new TontineFullError(situation.maxMembers);
  if (action === 'start' && situation.memberCount < 2) return () => new NotEnoughMembersError(situation.memberCount);
  if (action === 'contribute' && situation.requestedCycle !== undefined && situation.requestedCycle !== situation.currentCycle) {
    const requested = situation.requestedCycle;
    if (situation.paidRequestedCycle) return () => new ContributionAlreadyPaidError(requested);
    return () => new CycleNotOpenError(requested, situation.currentCycle);
  }
  if (action === 'contribute' && situation.paidCurrentCycle) return () => new ContributionAlreadyPaidError(situation.currentCycle);
  return null;
}

/** Throws the contract's error when the caller may not do `action` now. */
export function assertAllowed(situation: TontineSituation, action: TontineAction): void {
  const refuse = refusal(situation, action);
  if (refuse) throw refuse();
}

/** What the caller may do now: the `allowed_actions` of the contract. */
export function allowedActions(situation: TontineSituation): TontineAction[] {
  return TONTINE_ACTIONS.filter((action) => refusal(situation, action) === null);
}

const DAY_MS = 86_400_000;

/**
 * When cycle `cycle` falls due: the start plus `cycle` periods (7 or 14 days; a month is the
 * same day and time `cycle` months later, or the last day of a shorter month).
 */
export function cycleDueAt(startedAt: Date, frequency: TontineFrequency, cycle: number): Date {
  if (frequency === 'weekly') return new Date(startedAt.getTime() + cycle * 7 * DAY_MS);
  if (frequency === 'biweekly') return new Date(startedAt.getTime() + cycle * 14 * DAY_MS);
  const monthIndex = startedAt.getUTCMonth() + cycle;
  const year = startedAt.getUTCFullYear() + Math.floor(monthIndex / 12);
  const month = monthIndex % 12;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  const due = new Date(startedAt.getTime());
  due.setUTCFullYear(year, month, Math.min(startedAt.getUTCDate(), lastDay));
  return due;
}
