import { ConflictError, UnavailableError, UnprocessableError } from '../../errors';

/** 409: the `version` sent is not the current one; the client must read the status again. */
export class VersionConflictError extends ConflictError {
  constructor() {
    super('VersionConflict', 'The status was changed by someone else since you read it: read it again (GET network-status) and retry with its current version.');
  }
}

/** 422: the version counter reached its maximum; it never wraps (a wrap could let a stale client win). */
export class VersionExhaustedError extends UnprocessableError {
  constructor(max: number) {
    super('VersionExhausted', `The status version reached its maximum (${max}) and never wraps; no further change is accepted.`, { max_version: max });
  }
}

/** 503: the status store did not answer in time (lock or statement timeout); nothing was changed. */
export class StatusUnavailableError extends UnavailableError {
  constructor(retryAfterSeconds: number) {
    super('StatusUnavailable', 'The status is temporarily unavailable (it is being changed or the store is busy); nothing was changed. Retry later.', retryAfterSeconds);
  }
}
