import { DomainError, UnauthorizedError } from '../../errors';

/** Unknown identifier, wrong password or disabled account: one answer for all. */
export class InvalidCredentialsError extends UnauthorizedError {
  constructor() {
    super('Invalid identifier or password.', 'InvalidCredentials');
  }
}

/** Whole seconds from `now` until `date`, at least 1 (for Retry-After). */
export function secondsUntil(date: Date, now: Date): number {
  return Math.max(1, Math.ceil((date.getTime() - now.getTime()) / 1000));
}

/** Too many failed attempts; `retryAfterSeconds` is absent for an administrative lock. */
export class AccountLockedError extends DomainError {
  constructor(retryAfterSeconds?: number) {
    super(
      'AccountLocked',
      'unauthenticated',
      retryAfterSeconds === undefined
        ? 'The account is locked. Contact support.'
        : `Too many failed attempts: the account is locked. Retry in ${Math.ceil(retryAfterSeconds / 60)} minute(s).`,
      undefined,
      retryAfterSeconds === undefined ? undefined : { 'Retry-After': String(retryAfterSeconds) },
    );
  }
}

export class InvalidRefreshTokenError extends UnauthorizedError {
  constructor() {
    super('The refresh token is invalid or has expired; log in again.', 'InvalidRefreshToken');
  }
}

export class RefreshTokenReusedError extends UnauthorizedError {
  constructor() {
    super('This refresh token was already used; the session has been revoked. Log in again.', 'RefreshTokenReused');
  }
}
