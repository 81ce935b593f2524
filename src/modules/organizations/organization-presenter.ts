import type { Schemas } from '../../contract';
import { maskPartyIdentifier } from '../auth';
import type { InvitationRecord, MemberRecord } from './membership-repository';
import type { OrganizationRecord, VerificationRequirement } from './organization-repository';

export type OrganizationView = Schemas['Organization'];
export type MemberView = Schemas['OrganizationMember'];
export type InvitationView = Schemas['OrganizationInvitation'];

const ALL_REQUIREMENTS: VerificationRequirement[] = ['registration_document', 'representative'];

/** What the verification still needs, is reviewing, and why it was last refused: from its status. */
export function requirementsOf(record: OrganizationRecord): OrganizationView['verification']['requirements'] {
  switch (record.verificationStatus) {
    case 'verified':
      return { due: [], pending: [], errors: [] };
    case 'pending':
      return { due: [], pending: [...ALL_REQUIREMENTS], errors: [] };
    case 'rejected':
      return {
        due: [...ALL_REQUIREMENTS],
        pending: [],
        errors: [{ requirement: record.verificationRejectedRequirement ?? 'registration_document', reason: record.verificationRejectionReason ?? 'Rejected.' }],
      };
    default:
      return { due: [...ALL_REQUIREMENTS], pending: [], errors: [] };
  }
}

export function presentOrganization(record: OrganizationRecord): OrganizationView {
  return {
    id: record.id,
    legal_name: record.legalName,
    trading_name: record.tradingName,
    country: record.country,
    registration_number: record.registrationNumber,
    legal_form: record.legalForm,
    default_currency: record.defaultCurrency,
    support_email: record.supportEmail,
    support_phone: record.supportPhone,
    status: record.status,
    verification: {
      status: record.verificationStatus,
      requirements: requirementsOf(record),
      submitted_at: record.verificationSubmittedAt?.toISOString() ?? null,
      decided_at: record.verificationDecidedAt?.toISOString() ?? null,
      representative_user_id: record.verificationRepresentativeUserId,
    },
    modules: record.moduleAccess,
    created_at: record.createdAt.toISOString(),
  };
}

/** A member; the identifier in full only for those who manage members (`reveal`). */
export function presentMember(member: MemberRecord, reveal: boolean, status: MemberView['status'] = member.status === 'suspended' ? 'suspended' : 'active'): MemberView {
  return {
    user_id: member.userId,
    identifier: reveal ? member.identifier : maskPartyIdentifier(member.identifier),
    role: member.role,
    status,
    joined_at: member.joinedAt.toISOString(),
  };
}

/** `expired`: still pending past its expiry. */
export function invitationStatus(invitation: InvitationRecord, now: Date): InvitationView['status'] {
  return invitation.status === 'pending' && invitation.expiresAt.getTime() <= now.getTime() ? 'expired' : invitation.status;
}

export function presentInvitation(invitation: InvitationRecord, now: Date, reveal = true): InvitationView {
  return {
    id: invitation.id,
    organization_id: invitation.organizationId,
    organization_name: invitation.organizationName,
    identifier: reveal ? invitation.identifier : maskPartyIdentifier(invitation.identifier),
    role: invitation.role,
    status: invitationStatus(invitation, now),
    invited_by: invitation.invitedBy,
    created_at: invitation.createdAt.toISOString(),
    expires_at: invitation.expiresAt.toISOString(),
    responded_at: invitation.respondedAt?.toISOString() ?? null,
  };
}
