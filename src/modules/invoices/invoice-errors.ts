import { ConflictError, NotFoundError, UnprocessableError } from '../../errors';

const ACTION_NAMES: Record<string, string> = {
  finalize: 'finalized',
  pay: 'marked paid',
  mark_uncollectible: 'marked uncollectible',
  void: 'voided',
  accept: 'accepted',
  cancel: 'canceled',
  credit: 'credited',
};

const KIND_NAMES: Record<string, string> = { invoice: 'invoice', quote: 'quote', credit_note: 'credit note' };

/** 404: the document does not exist in this organisation (a foreign one answers the same). */
export class DocumentNotFoundError extends NotFoundError {
  constructor() {
    super('The document does not exist in this organization.', 'DocumentNotFound');
  }
}

/** 404: a customer_id that is unknown or belongs to another organisation. */
export class CustomerNotFoundError extends NotFoundError {
  constructor() {
    super('The customer does not exist in this organization.', 'CustomerNotFound');
  }
}

/** 409: the document's current status does not allow the action. */
export class InvalidStatusTransitionError extends ConflictError {
  constructor(kind: string, status: string, action: string, allowedFrom: readonly string[]) {
    super(
      'InvalidStatusTransition',
      `A ${status} ${KIND_NAMES[kind] ?? kind} cannot be ${ACTION_NAMES[action] ?? action}; only a ${allowedFrom.join(' or ')} one can.`,
      { kind, status, action, allowed_from: [...allowedFrom] },
    );
  }
}

/** 422: the action does not exist for this kind of document (accepting an invoice). */
export class ActionNotApplicableError extends UnprocessableError {
  constructor(kind: string, action: string) {
    super('ActionNotApplicable', `A ${KIND_NAMES[kind] ?? kind} cannot be ${ACTION_NAMES[action] ?? action}.`, { kind, action });
  }
}

/** 409: the quote passed its expiry; it is now canceled. */
export class QuoteExpiredError extends ConflictError {
  constructor(expiresAt: Date) {
    super('QuoteExpired', `The quote expired at ${expiresAt.toISOString()} and can no longer be accepted.`, { expires_at: expiresAt.toISOString() });
  }
}

/** 409: credit notes apply to finalised invoices that are not void. */
export class InvoiceNotCreditableError extends ConflictError {
  constructor(status: string) {
    super('InvoiceNotCreditable', `A ${status} invoice cannot be credited; only an open, paid or uncollectible invoice can.`, { status });
  }
}

/** 422: the credit note is larger than what remains on the invoice. */
export class CreditNoteExceedsRemainingError extends UnprocessableError {
  constructor(remaining: string, requested: string, currency: string) {
    super(
      'CreditNoteExceedsRemaining',
      `The credit note total (${requested} ${currency}) exceeds the amount remaining on the invoice (${remaining} ${currency}).`,
      { remaining, requested, currency },
    );
  }
}

/** 422: the invoice number sequence of the year is exhausted (999,999,999 documents). */
export class NumberingExhaustedError extends UnprocessableError {
  constructor(kind: string, year: number) {
    super('NumberingExhausted', `No ${KIND_NAMES[kind] ?? kind} number is left for ${year}.`, { kind, year });
  }
}
