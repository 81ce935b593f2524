import { defineLifecycle } from '../../domain/lifecycle';
import { ConflictOfInterestError, AdministratorsOnlyError, DocumentsMissingError, DocumentsNotRequiredError, InvalidVerificationStateError, VerificationSessionExpiredError, VerificationSessionNotFoundError } from './identity-errors';
import { REQUIRED_DOCUMENTS, type RejectionKind, type SessionStatus, type VerificationSession } from './identity-types';

export type SessionAction = 'upload_document' | 'submit' | 'cancel' | 'resolve' | 'approve' | 'reject' | 'expire';
export type SessionParty = 'owner' | 'administrator';

/** What the provider answered, or how a reviewer rejected: decides where `resolve` and `reject` lead. */
export type SessionOutcome = 'verified' | 'requires_input' | 'needs_review' | RejectionKind;

export interface SessionContext {
  status: SessionStatus;
  session: VerificationSession;
  parties: ReadonlySet<SessionParty>;
  now: Date;
}

type Guard = 'expired' | 'documents_missing' | 'documents_not_required';

function missingDocuments(session: VerificationSession): string[] {
  if (session.tier !== 'tier_2') return [];
  const uploaded = new Set(session.documents.map((d) => d.kind));
  return REQUIRED_DOCUMENTS.filter((kind) => !uploaded.has(kind));
}

const notExpired = (c: SessionContext): Guard | null => (c.session.expiresAt.getTime() <= c.now.getTime() ? 'expired' : null);

/**
 * A session's lifecycle (Stripe Identity's, with a review step):
 * requires_input -> processing (submit) -> verified | requires_input | needs_review (the provider);
 * needs_review -> verified (approve) | requires_input (reject, retry allowed) | rejected (reject, final);
 * requires_input -> canceled (the owner cancels, or the session expires).
 * Reviews are by administrators, never of their own session (ConflictOfInterest).
 */
export const SESSION_LIFECYCLE = defineLifecycle<SessionStatus, SessionAction, SessionParty, SessionContext, SessionOutcome, Guard>({
  initial: 'requires_input',
  transitions: {
    upload_document: { from: ['requires_input'], to: 'requires_input', by: ['owner'], guard: (c) => (c.session.tier !== 'tier_2' ? 'documents_not_required' : notExpired(c)) },
    submit: {
      from: ['requires_input'],
      to: 'processing',
      by: ['owner'],
      guard: (c) => notExpired(c) ?? (missingDocuments(c.session).length > 0 ? 'documents_missing' : null),
    },
    cancel: { from: ['requires_input'], to: 'canceled', by: ['owner'] },
    expire: { from: ['requires_input'], to: 'canceled' },
    resolve: { from: ['processing'], to: (outcome) => (outcome === 'verified' || outcome === 'needs_review' ? outcome : 'requires_input') },
    approve: { from: ['needs_review'], to: 'verified', by: ['administrator'], notBy: ['owner'] },
    reject: { from: ['needs_review'], to: (outcome) => (outcome === 'final' ? 'rejected' : 'requires_input'), by: ['administrator'], notBy: ['owner'] },
  },
  listed: ['upload_document', 'submit', 'cancel', 'approve', 'reject'],
  partiesOf: (c) => c.parties,
  refuse: (refusal, action, context, allowed) => {
    if (refusal.reason === 'conflict') return new ConflictOfInterestError();
    if (refusal.reason === 'party') return action === 'approve' || action === 'reject' ? new AdministratorsOnlyError() : new VerificationSessionNotFoundError();
    if (refusal.reason === 'guard' && refusal.guard === 'expired') return new VerificationSessionExpiredError(context.session.expiresAt);
    if (refusal.reason === 'guard' && refusal.guard === 'documents_missing') return new DocumentsMissingError(missingDocuments(context.session));
    if (refusal.reason === 'guard' && refusal.guard === 'documents_not_required') return new DocumentsNotRequiredError();
    return new InvalidVerificationStateError(action, context.status, allowed());
  },
});

/** What a session still needs before it can be submitted (empty once submitted). */
export function requirementsOf(session: VerificationSession): string[] {
  if (session.status !== 'requires_input') return [];
  return [...missingDocuments(session), 'identity_details'];
}
