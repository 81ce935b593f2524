import { ConflictError, ForbiddenError, NotFoundError, UnprocessableError } from '../../errors';

export class VerificationSessionNotFoundError extends NotFoundError {
  constructor() {
    super('No verification session of yours has this id.', 'VerificationSessionNotFound');
  }
}

/** 409: the action does not apply to the session's status (details name both and what is allowed). */
export class InvalidVerificationStateError extends ConflictError {
  constructor(action: string, status: string, allowed: readonly string[]) {
    super('InvalidVerificationSessionState', `A verification session that is ${status} cannot be asked to ${action.replace('_', ' ')}.`, { status, action, allowed_actions: [...allowed] });
  }
}

/** 409: the session's 24 hours have passed (it is canceled by the expiry job, if not already). */
export class VerificationSessionExpiredError extends ConflictError {
  constructor(expiresAt: Date) {
    super('VerificationSessionExpired', `This verification session expired at ${expiresAt.toISOString()}: start a new one.`);
  }
}

/** 409: one open session per user (answers its id). */
export class VerificationSessionOpenError extends ConflictError {
  constructor(sessionId: string) {
    super('VerificationSessionOpen', 'You already have a verification session under way: finish or cancel it first.', { session_id: sessionId });
  }
}

/** 422: the user already holds the tier asked for (or a higher one). */
export class TierAlreadyHeldError extends UnprocessableError {
  constructor(current: string) {
    super('TierAlreadyHeld', `You are already verified at ${current}.`);
  }
}

/** 422: a final rejection stands: no new session. */
export class VerificationRefusedError extends UnprocessableError {
  constructor() {
    super('VerificationRefused', 'Your identity verification was refused; contact support.');
  }
}

/** 422: a tier_2 session is submitted before its required documents are uploaded. */
export class DocumentsMissingError extends UnprocessableError {
  constructor(missing: readonly string[]) {
    super('DocumentsMissing', `Upload these documents before submitting: ${missing.join(', ')}.`, { missing: [...missing] });
  }
}

/** 422: documents go to tier_2 sessions only. */
export class DocumentsNotRequiredError extends UnprocessableError {
  constructor() {
    super('DocumentsNotRequired', 'A tier_1 verification takes no documents: submit the identity details.');
  }
}

/** 403: an administrator never reviews their own session. */
export class ConflictOfInterestError extends ForbiddenError {
  constructor() {
    super('ConflictOfInterest', 'You cannot review your own verification session: another administrator must.');
  }
}

export class AdministratorsOnlyError extends ForbiddenError {
  constructor() {
    super('InsufficientRole', 'Only platform administrators may review verification sessions.');
  }
}

/** 409: an account is closed only once nothing of value or in progress is left in it. */
export class AccountNotEmptyError extends ConflictError {
  constructor(details: { wallets_with_balance: string[]; open_escrows: number; open_tontines: number }) {
    super('AccountNotEmpty', 'Empty every wallet and end every open escrow and tontine before closing the account.', details);
  }
}
