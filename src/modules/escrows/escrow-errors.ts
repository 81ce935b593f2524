import { ConflictError, ForbiddenError, NotFoundError, UnprocessableError } from '../../errors';

/** 409: the escrow's status (or its inspection period) does not allow the action now. */
export class InvalidEscrowStateError extends ConflictError {
  constructor(action: string, status: string, allowedActions: readonly string[]) {
    super(
      'InvalidEscrowState',
      `This escrow is ${status}: "${action}" is not possible now.${allowedActions.length ? ` You may: ${allowedActions.join(', ')}.` : ''}`,
      { status, action, allowed_actions: [...allowedActions] },
    );
  }
}

/** 403: the caller's role in the escrow may never take the action. */
export class EscrowRoleForbiddenError extends ForbiddenError {
  constructor(action: string, allowedRoles: readonly string[]) {
    super('InsufficientRole', `Only the ${allowedRoles.join(' or the ')} may ${action} this escrow.`);
  }
}

/** 403: a platform administrator who is a party to the escrow may not rule on it. */
export class ConflictOfInterestError extends ForbiddenError {
  constructor(action: string) {
    super('ConflictOfInterest', `You are a party to this escrow: you cannot ${action} it. Another platform administrator must.`);
  }
}

export class EscrowNotFoundError extends NotFoundError {
  constructor() {
    super('No escrow transaction of yours has this id.');
  }
}

export class CounterpartyNotFoundError extends NotFoundError {
  constructor() {
    super('No platform user has this e-mail address or telephone number.', 'CounterpartyNotFound');
  }
}

export class SelfEscrowError extends UnprocessableError {
  constructor() {
    super('SelfEscrow', 'The counterparty must be another user: you cannot open an escrow with yourself.');
  }
}
