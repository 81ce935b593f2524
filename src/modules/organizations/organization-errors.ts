import { ConflictError, ForbiddenError, LockedError, NotFoundError, UnprocessableError } from '../../errors';
import type { ModuleName } from '../../contract';

export const ORGANIZATION_NOT_FOUND_MESSAGE = 'Organization not found.';

/** Unknown organisation, not a UUID, or the caller is not an active member: one answer. */
export class OrganizationNotFoundError extends NotFoundError {
  constructor() {
    super(ORGANIZATION_NOT_FOUND_MESSAGE);
  }
}

export class InsufficientRoleError extends ForbiddenError {
  constructor() {
    super('InsufficientRole', 'Your role in this organisation does not allow this operation.');
  }
}

const MODULE_LABEL: Record<ModuleName, string> = {
  payment_links: 'payment links',
  invoices: 'invoices',
  accounts: 'accounts',
  network_status: 'network status',
};

export class FeatureUnavailableError extends ForbiddenError {
  constructor(module: ModuleName) {
    super('FeatureUnavailable', `The ${MODULE_LABEL[module]} feature is not available for this organisation.`);
  }
}

export class ModuleLockedError extends LockedError {
  constructor(module: ModuleName) {
    super('ModuleLocked', `The ${MODULE_LABEL[module]} module is locked for changes in this organisation.`);
  }
}

export class OrganizationInactiveError extends UnprocessableError {
  constructor() {
    super('OrganizationInactive', 'The organisation is not active: this change is not allowed.');
  }
}

export class MemberNotFoundError extends NotFoundError {
  constructor() {
    super('No member of this organisation has this user id.', 'MemberNotFound');
  }
}

/** The organisation must keep an active owner: its last one can neither leave, be demoted nor be removed. */
export class LastOwnerError extends ConflictError {
  constructor() {
    super('LastOwner', 'The organisation must keep at least one active owner: make another member owner first.');
  }
}

export class AlreadyMemberError extends ConflictError {
  constructor() {
    super('AlreadyMember', 'This person is already an active member of the organisation.');
  }
}

/** Unknown id, or an invitation addressed to someone else, or revoked: one answer. */
export class InvitationNotFoundError extends NotFoundError {
  constructor() {
    super('No invitation has this id.', 'InvitationNotFound');
  }
}

export class InvitationExpiredError extends ConflictError {
  constructor() {
    super('InvitationExpired', 'This invitation has expired: ask for a new one.');
  }
}

export class InvitationNotPendingError extends ConflictError {
  constructor(status: string) {
    super('InvitationNotPending', `This invitation is ${status}: it can no longer be answered.`);
  }
}

export class RepresentativeNotVerifiedError extends ConflictError {
  constructor() {
    super('RepresentativeNotVerified', 'The representative must be an active member whose identity is verified (tier_2).');
  }
}

export class VerificationAlreadySubmittedError extends ConflictError {
  constructor(status: string) {
    super('VerificationAlreadySubmitted', `The business verification is ${status}: it cannot be submitted again now.`);
  }
}

export class VerificationNotPendingError extends ConflictError {
  constructor() {
    super('VerificationNotPending', 'This organisation has no pending verification.');
  }
}

/** A platform administrator who is a member of the organisation reviews someone else's, never their own. */
export class OrganizationConflictOfInterestError extends ForbiddenError {
  constructor() {
    super('ConflictOfInterest', 'You are a member of this organisation: another platform administrator must review it.');
  }
}
