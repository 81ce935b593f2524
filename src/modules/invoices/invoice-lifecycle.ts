import { defineLifecycle, type Lifecycle } from '../../domain/lifecycle';
import type { DocumentKind, DocumentStatus } from './invoice-types';
import { ActionNotApplicableError, InvalidStatusTransitionError } from './invoice-errors';

export type DocumentAction = 'finalize' | 'pay' | 'mark_uncollectible' | 'void' | 'accept' | 'cancel';

const DOCUMENT_ACTIONS: readonly DocumentAction[] = ['finalize', 'pay', 'mark_uncollectible', 'void', 'accept', 'cancel'];

interface Transition {
  from: readonly DocumentStatus[];
  to: DocumentStatus;
}

/**
 * Stripe's lifecycles, as one table per kind (run by the shared engine, src/domain/lifecycle.ts):
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

const INITIAL: Readonly<Record<DocumentKind, DocumentStatus>> = { invoice: 'draft', quote: 'draft', credit_note: 'issued' };

/** What a document's lifecycle reads. */
interface DocumentState {
  status: DocumentStatus;
}

function lifecycleOf(kind: DocumentKind): Lifecycle<DocumentStatus, DocumentAction, DocumentState, never, never> {
  return defineLifecycle<DocumentStatus, DocumentAction, never, DocumentState>({
    initial: INITIAL[kind],
    transitions: LIFECYCLE[kind],
    listed: DOCUMENT_ACTIONS,
    // An action that does not exist for the kind is 422; one the status does not allow, 409.
    refuse: (refusal, action, { status }) =>
      refusal.reason === 'unknown' ? new ActionNotApplicableError(kind, action) : new InvalidStatusTransitionError(kind, status, action, LIFECYCLE[kind][action]?.from ?? []),
  });
}

/** The three document lifecycles. */
export const DOCUMENT_LIFECYCLES: Readonly<Record<DocumentKind, Lifecycle<DocumentStatus, DocumentAction, DocumentState, never, never>>> = {
  invoice: lifecycleOf('invoice'),
  quote: lifecycleOf('quote'),
  credit_note: lifecycleOf('credit_note'),
};

/**
 * The status `action` leads to from `status`. An action that does not exist for the kind
 * (accepting an invoice) throws ActionNotApplicable (422); an action the current status
 * does not allow (paying a void invoice) throws InvalidStatusTransition (409).
 */
export function nextStatus(kind: DocumentKind, status: DocumentStatus, action: DocumentAction): DocumentStatus {
  return DOCUMENT_LIFECYCLES[kind].next(action, { status });
}

/** The status a new document of `kind` starts in. */
export function initialStatus(kind: DocumentKind): DocumentStatus {
  return DOCUMENT_LIFECYCLES[kind].initial;
}
