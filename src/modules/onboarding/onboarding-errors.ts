import { UnprocessableError } from '../../errors';

/** A wrong code; `details.attempts_left` says how many tries remain before the verification is spent. */
export class InvalidVerificationCodeError extends UnprocessableError {
  constructor(attemptsLeft: number) {
    super('InvalidVerificationCode', `The code is not right. ${attemptsLeft} attempt(s) left.`, { attempts_left: attemptsLeft });
  }
}

/** The verification expired, was used, or had too many wrong codes: ask for a new code. */
export class VerificationExpiredError extends UnprocessableError {
  constructor() {
    super('VerificationExpired', 'This code can no longer be used (expired, already used, or too many wrong attempts): ask for a new one.');
  }
}

/** Why a password is refused. */
export type WeakPasswordReason = 'too_short' | 'too_common' | 'contains_identifier' | 'same_as_current';

const REASONS: Record<WeakPasswordReason, string> = {
  too_short: 'The password must be at least 10 characters long.',
  too_common: 'The password is too common or too easy to guess: use a longer phrase of unrelated words.',
  contains_identifier: 'The password must not contain your e-mail address, telephone number or name.',
  same_as_current: 'The new password must differ from the current one.',
};

export class WeakPasswordError extends UnprocessableError {
  constructor(reason: WeakPasswordReason) {
    super('WeakPassword', REASONS[reason], { reason });
  }
}

/** POST /me/password with a current password that is not the user's. */
export class InvalidCurrentPasswordError extends UnprocessableError {
  constructor() {
    super('InvalidCurrentPassword', 'The current password is not right.');
  }
}
