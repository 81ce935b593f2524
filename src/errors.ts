/**
 * The one error hierarchy. Services throw these with a stable `code` (the `error` field of
 * the envelope) and a category; only the HTTP error middleware turns a category into a status,
 * so no service knows about HTTP.
 */

export type ErrorCategory =
  | 'invalid' // 400
  | 'unauthenticated' // 401
  | 'forbidden' // 403
  | 'not_found' // 404
  | 'conflict' // 409
  | 'gone' // 410
  | 'too_large' // 413
  | 'unprocessable' // 422
  | 'locked' // 423
  | 'rate_limited' // 429
  | 'not_implemented' // 501
  | 'unavailable'; // 503

export interface FieldIssue {
  field: string;
  message: string;
}

export type ErrorDetails = FieldIssue[] | Record<string, unknown>;

export class DomainError extends Error {
  constructor(
    readonly code: string,
    readonly category: ErrorCategory,
    message: string,
    readonly details?: ErrorDetails,
    /** Extra response headers, e.g. Location or Retry-After. */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = code;
  }
}

export class ValidationError extends DomainError {
  constructor(message: string, details?: FieldIssue[]) {
    super('ValidationError', 'invalid', message, details);
  }

  static field(field: string, message: string): ValidationError {
    return new ValidationError(message, [{ field, message }]);
  }
}

export class NotFoundError extends DomainError {
  constructor(message = 'The resource does not exist.', code = 'NotFound') {
    super(code, 'not_found', message);
  }
}

export class UnauthorizedError extends DomainError {
  constructor(message = 'Authentication is required: send a valid bearer access token.', code = 'Unauthorized') {
    super(code, 'unauthenticated', message);
  }
}

export class ForbiddenError extends DomainError {
  constructor(code: string, message: string) {
    super(code, 'forbidden', message);
  }
}

export class ConflictError extends DomainError {
  constructor(code: string, message: string, details?: ErrorDetails, headers?: Record<string, string>) {
    super(code, 'conflict', message, details, headers);
  }
}

export class UnprocessableError extends DomainError {
  constructor(code: string, message: string, details?: ErrorDetails, headers?: Record<string, string>) {
    super(code, 'unprocessable', message, details, headers);
  }
}

export class LockedError extends DomainError {
  constructor(code: string, message: string) {
    super(code, 'locked', message);
  }
}

/**
 * A caller over a rate limit's budget (429 RateLimitExceeded). The limiter has already put its
 * RateLimit, RateLimit-Policy and Retry-After headers on the response; the error handler keeps
 * them and writes the envelope.
 */
export class RateLimitedError extends DomainError {
  constructor(message: string) {
    super('RateLimitExceeded', 'rate_limited', message);
  }
}

export class UnavailableError extends DomainError {
  constructor(code: string, message: string, retryAfterSeconds: number) {
    super(code, 'unavailable', message, undefined, { 'Retry-After': String(retryAfterSeconds) });
  }
}

export class NotImplementedError extends DomainError {
  constructor(operation: string) {
    super('NotImplemented', 'not_implemented', `${operation} is not implemented yet.`);
  }
}

export class PayloadTooLargeError extends DomainError {
  constructor(code: string, message: string, details?: ErrorDetails) {
    super(code, 'too_large', message, details);
  }
}
