import { ConflictError, DomainError, ForbiddenError, NotFoundError, UnprocessableError } from '../../errors';
import { acceptedScopes } from './api-key-scopes';

/** 403: an API key on an operation keys may not call (personal routes, key and member management). */
export class ApiKeyNotAllowedError extends ForbiddenError {
  constructor() {
    super('ApiKeyNotAllowed', "API keys cannot call this operation; use a user's access token.");
  }
}

/** 403: the key lacks the operation's scope; `X-Accepted-Scopes` lists the scopes that would do. */
export class InsufficientScopeError extends DomainError {
  constructor(requiredScope: string, grantedScopes: readonly string[]) {
    super(
      'InsufficientScope',
      'forbidden',
      `This API key does not have the ${requiredScope} scope.`,
      { required_scope: requiredScope, granted_scopes: [...grantedScopes] },
      { 'X-Accepted-Scopes': acceptedScopes(requiredScope).join(', ') },
    );
  }
}

export class ApiKeyNotFoundError extends NotFoundError {
  constructor() {
    super('No API key of this organisation has this id.', 'ApiKeyNotFound');
  }
}

/** 409: rolling a key that is revoked or expired. */
export class ApiKeyNotActiveError extends ConflictError {
  constructor(status: 'revoked' | 'expired') {
    super('ApiKeyNotActive', `The API key is ${status}; create a new one.`);
  }
}

/** 422: the organisation already has the most active keys allowed. */
export class TooManyApiKeysError extends UnprocessableError {
  constructor(max: number) {
    super('TooManyApiKeys', `The organisation already has ${max} active API keys; revoke one first.`);
  }
}
