import type { DocumentKind, DocumentStatus } from './invoice-types';
import { ActionNotApplicableError, InvalidStatusTransitionError } from './invoice-errors';

export type DocumentAction = 'finalize' | 'pay' | 'mark_uncollectible' | 'void' | 'accept' | 'cancel';

interface Transition {
  from: readonly DocumentStatus[];
  to: DocumentStatus;
}

/**
 * Stripe's lifecycles, as one table:
 * invoice     draft -> open (finalize) -> paid | void | uncollectible; uncollectible -> paid | void
 * quote       draft -> open (finalize) -> accepted | canceled; a draft can be canceled too
 * credit note issued -> void
 */
export const LIFECYCLE: Readonly<Record<DocumentKind, Partial<Record<DocumentAction, Transition>>>> = {
  invoice: {
    finalize: { from: ['draft'], to: 'open' },
    pay: { from: ['open', 'uncollectible'], to: 'paid' },
    mark_uncollectible: { from: ['open'], to: 'uncollectible' },
    void: { from: ['open', 'uncollectible'], to: 'void' },
  },
  quote: {
    finalize: { from: ['draft'], to: 'open' },
    accept: { from: ['open'], to: 'accepted' },
    cancel: { from: ['draft', 'open'], to: 'canceled' },
  },
  credit_note: {
    void: { from: ['issued'], to: 'void' },
  },
};

/**
 * The status `action` leads to from `status`. An action that does not exist for the kind
 * (accepting an invoice) throws ActionNotApplicable (422); an action the current status
 * does not allow (paying a void invoice) throws InvalidStatusTransition (409).
 */
export function nextStatus(kind: DocumentKind, status: DocumentStatus, action: DocumentAction): DocumentStatus {
  const transition = LIFECYCLE[kind][action];
  if (!transition) throw new ActionNotApplicableError(kind, action);
  if (!transition.from.includes(status)) throw new InvalidStatusTransitionError(kind, status, action, transition.from);
  return transition.to;
}
