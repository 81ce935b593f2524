import { ConflictError, DomainError, NotFoundError, ValidationError } from '../../errors';

/** Errors of the payment links module (stable names; the error middleware maps categories). */

export class DestinationAccountInactive extends ConflictError {
  constructor(accountId: string) {
    super('DestinationAccountInactive', 'The destination account is not active: it cannot receive payments.', {
      destination_account_id: accountId,
    });
  }
}

/** An account that is not the organisation's is invalid data (400), never a hint that it exists. */
export function destinationAccountNotFound(): ValidationError {
  return ValidationError.field('body.destination_account_id', 'No account of this organisation has this id.');
}

export class PaymentLinkNotFound extends NotFoundError {
  constructor() {
    super('No payment link of this organisation has this id.', 'PaymentLinkNotFound');
  }
}

export class PaymentNotFound extends NotFoundError {
  constructor() {
    super('No payment of this organisation has this id.', 'PaymentNotFound');
  }
}

export class PaymentLinkNotActive extends ConflictError {
  constructor(status: string) {
    super('PaymentLinkNotActive', `The payment link is ${status}: it no longer accepts payments.`, { status });
  }
}

/** Why the public page refuses a payment (rendered as an HTML page, never as JSON). */
export type PayRefusal =
  | 'unknown_link'
  | 'link_inactive'
  | 'link_expired'
  | 'link_completed'
  | 'link_busy'
  | 'reference_paid'
  | 'account_unavailable'
  /** The organisation is not active, or its payment links module is locked or not enabled. */
  | 'merchant_unavailable';

export class PaymentRefused extends DomainError {
  constructor(
    readonly reason: PayRefusal,
    message: string,
  ) {
    super('PaymentRefused', reason === 'unknown_link' ? 'not_found' : reason === 'link_busy' || reason === 'reference_paid' || reason === 'account_unavailable' ? 'conflict' : 'gone', message);
  }
}
