import { ConflictError, DomainError, NotFoundError, UnprocessableError } from '../../errors';
import type { TontineAction, TontineStatus } from './tontine-types';

const ACTION_PHRASES: Record<TontineAction | 'dissolve', string> = {
  invite: 'take invitations',
  join: 'be joined',
  leave: 'be left',
  start: 'be started',
  contribute: 'take contributions',
  cancel: 'be canceled',
  dissolve: 'be dissolved',
};

const ALLOWED_FROM: Record<TontineAction | 'dissolve', string> = {
  invite: 'a forming one',
  join: 'a forming one',
  leave: 'a forming one',
  start: 'a forming one',
  contribute: 'an active one',
  cancel: 'a forming or active one',
  dissolve: 'a forming or active one',
};

/** 404: unknown, or the caller is neither a member nor invited (both answer the same). */
export class TontineNotFoundError extends NotFoundError {
  constructor() {
    super('No tontine of yours has this id.', 'TontineNotFound');
  }
}

/** 409: the tontine's status does not allow the action; names the status and what the caller may do. */
export class InvalidTontineStateError extends ConflictError {
  constructor(status: TontineStatus, action: TontineAction | 'dissolve', allowedActions: readonly TontineAction[], message?: string) {
    super('InvalidTontineState', message ?? `A ${status} tontine cannot ${ACTION_PHRASES[action]}; only ${ALLOWED_FROM[action]} can.`, {
      status,
      action,
      allowed_actions: [...allowedActions],
    });
  }
}

/** 403: an organizer's action by someone else. */
export class NotTontineOrganizerError extends DomainError {
  constructor(action: TontineAction, role: string, allowedActions: readonly TontineAction[]) {
    super('NotTontineOrganizer', 'forbidden', `Only the organizer of the tontine can ${action} ${action === 'invite' ? 'members' : 'it'}.`, {
      action,
      role,
      allowed_actions: [...allowedActions],
    });
  }
}

export class AlreadyMemberError extends ConflictError {
  constructor() {
    super('AlreadyMember', 'This user is already a member of the tontine.');
  }
}

export class TontineFullError extends ConflictError {
  constructor(maxMembers: number) {
    super('TontineFull', `The tontine already has its maximum number of members (${maxMembers}).`, { max_members: maxMembers });
  }
}

export class ContributionAlreadyPaidError extends ConflictError {
  constructor(cycle: number) {
    super('ContributionAlreadyPaid', `You already paid your contribution to cycle ${cycle}.`, { cycle });
  }
}

/** 409: a contribution names a cycle that is not the open one (and that the caller has not paid). */
export class CycleNotOpenError extends ConflictError {
  constructor(cycle: number, openCycle: number) {
    super('CycleNotOpen', `Cycle ${cycle} is not open: the open cycle is ${openCycle}.`, { cycle, open_cycle: openCycle });
  }
}

export class InviteeNotFoundError extends NotFoundError {
  constructor() {
    super('No platform user has this e-mail address or telephone number.', 'InviteeNotFound');
  }
}

export class NotEnoughMembersError extends UnprocessableError {
  constructor(memberCount: number) {
    super('NotEnoughMembers', `A tontine starts with at least 2 members; it has ${memberCount}.`, { member_count: memberCount });
  }
}

export class OrganizerCannotLeaveError extends UnprocessableError {
  constructor() {
    super('OrganizerCannotLeave', 'The organizer cannot leave the tontine; cancel it instead.');
  }
}
