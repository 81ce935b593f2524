import type { Caller, Schemas } from '../../contract';
import { SESSION_LIFECYCLE, requirementsOf, type SessionParty } from './identity-lifecycle';
import type { VerificationSession } from './identity-types';

function partiesOf(session: VerificationSession, caller: Pick<Caller, 'userId' | 'isAdmin'>): Set<SessionParty> {
  const parties = new Set<SessionParty>();
  if (session.userId === caller.userId) parties.add('owner');
  if (caller.isAdmin) parties.add('administrator');
  return parties;
}

/** The contract's VerificationSession: never what was submitted (personal data stays sealed). */
export function presentSession(session: VerificationSession, caller: Pick<Caller, 'userId' | 'isAdmin'>, now: Date, asAdministrator = false): Schemas['VerificationSession'] {
  const context = { status: session.status, session, parties: partiesOf(session, asAdministrator ? { ...caller, userId: '' } : { ...caller, isAdmin: false }), now };
  const shown = (action: string): action is Schemas['VerificationSessionAction'] => (asAdministrator ? action === 'approve' || action === 'reject' : action !== 'approve' && action !== 'reject' && action !== 'resolve' && action !== 'expire');
  const allowed = SESSION_LIFECYCLE.allowedActions(context).filter(shown);
  return {
    id: session.id,
    object: 'verification_session',
    tier: session.tier,
    status: session.status,
    requirements: requirementsOf(session) as Schemas['VerificationSession']['requirements'],
    last_error: session.lastError,
    documents: session.documents.map((d) => ({ kind: d.kind, content_type: d.contentType as 'image/jpeg', size_bytes: d.sizeBytes, uploaded_at: d.uploadedAt.toISOString() })),
    allowed_actions: allowed,
    submitted_at: session.submittedAt?.toISOString() ?? null,
    decided_at: session.decidedAt?.toISOString() ?? null,
    expires_at: session.expiresAt.toISOString(),
    created_at: session.createdAt.toISOString(),
    updated_at: session.updatedAt.toISOString(),
  };
}

/** The administrators' view: the person and the review decision too. */
export function presentAdminSession(session: VerificationSession, caller: Pick<Caller, 'userId' | 'isAdmin'>, now: Date): Schemas['AdminVerificationSession'] {
  const review = session.review;
  return {
    ...presentSession(session, caller, now, true),
    // Reviewing one's own session is refused: it never offers approve or reject.
    ...(session.userId === caller.userId ? { allowed_actions: [] } : {}),
    user_id: session.userId,
    review: review
      ? { decision: review.decision, reviewer_user_id: review.reviewerUserId, reason_code: review.reasonCode as Schemas['VerificationRejectionReason'] | null, rejection: review.rejectionKind, note: review.note }
      : null,
  };
}
