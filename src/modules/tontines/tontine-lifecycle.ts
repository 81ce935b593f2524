import { defineLifecycle } from '../../domain/lifecycle';
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

/** What a contribution did: whether it paid out the last cycle's pot (which completes the tontine). */
export interface ContributionOutcome {
  completesTontine: boolean;
}

type TontineGuard = 'payout_made' | 'full' | 'not_enough_members' | 'already_paid' | 'cycle_not_open';

const roomLeft = (s: TontineSituation): TontineGuard | null => (s.memberCount >= s.maxMembers ? 'full' : null);

/**
 * Who may do what, in which status, and the action's own condition: the whole lifecycle in
 * one table (run by the shared engine, src/domain/lifecycle.ts). `dissolve` is the platform
 * administrator's (POST /admin/tontines/{id}/dissolve); it is never among a member's
 * `allowed_actions`.
 */
const TONTINE_LIFECYCLE = defineLifecycle<TontineStatus, TontineAction | 'dissolve', TontineRole, TontineSituation, ContributionOutcome, TontineGuard>({
  // The database's default for a new row.
  initial: 'forming',
  transitions: {
    invite: { from: ['forming'], by: ['organizer'], to: 'forming', guard: roomLeft },
    join: { from: ['forming'], by: ['invited'], to: 'forming', guard: roomLeft },
    leave: { from: ['forming'], by: ['member'], to: 'forming' },
    start: { from: ['forming'], by: ['organizer'], to: 'active', guard: (s) => (s.memberCount < 2 ? 'not_enough_members' : null) },
    contribute: {
      from: ['active'],
      by: ['organizer', 'member'],
      to: (outcome) => (outcome.completesTontine ? 'completed' : 'active'),
      guard: (s) => {
        if (s.requestedCycle !== undefined && s.requestedCycle !== s.currentCycle) return s.paidRequestedCycle ? 'already_paid' : 'cycle_not_open';
        return s.paidCurrentCycle ? 'already_paid' : null;
      },
    },
    // After a payout, the members who already received a pot owe the others: nobody may walk away.
    cancel: { from: ['forming', 'active'], by: ['organizer'], to: 'canceled', guard: (s) => (s.status === 'active' && s.payoutMade ? 'payout_made' : null) },
    dissolve: { from: ['forming', 'active'], by: ['administrator'], to: 'canceled' },
  },
  listed: TONTINE_ACTIONS,
  partiesOf: (situation) => [situation.role],
  refuse: (refusal, action, situation, allowed) => {
    const { role, status } = situation;
    switch (refusal.reason) {
      case 'unknown':
      case 'party':
        // Checked in this order: 409 AlreadyMember, 404 for member-only actions of a
        // non-member, 422 OrganizerCannotLeave, else 403 NotTontineOrganizer.
        if (action === 'join') return new AlreadyMemberError();
        if ((action === 'leave' || action === 'contribute') && (role === 'invited' || role === 'former_member')) return new TontineNotFoundError();
        if (action === 'leave' && role === 'organizer') return new OrganizerCannotLeaveError();
        return new NotTontineOrganizerError(action as TontineAction, role, allowed() as TontineAction[]);
      case 'conflict':
      case 'state':
        return new InvalidTontineStateError(status, action, allowed() as TontineAction[]);
      case 'guard':
        switch (refusal.guard) {
          case 'payout_made':
            return new InvalidTontineStateError(
              status,
              action,
              allowed() as TontineAction[],
              'A pot has already been paid out: no member can end this tontine any more (only a platform administrator can dissolve it).',
            );
          case 'full':
            return new TontineFullError(situation.maxMembers);
          case 'not_enough_members':
            return new NotEnoughMembersError(situation.memberCount);
          case 'already_paid':
            return new ContributionAlreadyPaidError(situation.requestedCycle ?? situation.currentCycle);
          case 'cycle_not_open':
            return new CycleNotOpenError(situation.requestedCycle as number, situation.currentCycle);
        }
    }
  },
});

/** Throws the contract's error when the caller may not do `action` now. */
export function assertAllowed(situation: TontineSituation, action: TontineAction | 'dissolve'): void {
  TONTINE_LIFECYCLE.assertAllowed(action, situation);
}

/** What the caller may do now: the `allowed_actions` of the contract. */
export function allowedActions(situation: TontineSituation): TontineAction[] {
  return TONTINE_LIFECYCLE.allowedActions(situation) as TontineAction[];
}

/**
 * The status `action` writes (checked first against the situation it was allowed in); a
 * contribution needs its outcome (whether it completed the tontine).
 */
export function statusAfter(situation: TontineSituation, action: TontineAction | 'dissolve', outcome?: ContributionOutcome): TontineStatus {
  return TONTINE_LIFECYCLE.next(action, situation, outcome);
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
