import { pageRequest, type Handlers, type IdempotentResource } from '../../contract';
import { ValidationError } from '../../errors';
import type { OrganizationService } from './organization-service';
import type { VerificationService } from './verification-service';

type OrganizationOperation =
  | 'createOrganization'
  | 'getOrganization'
  | 'updateOrganization'
  | 'listOrganizationMembers'
  | 'updateOrganizationMember'
  | 'removeOrganizationMember'
  | 'listOrganizationInvitations'
  | 'createOrganizationInvitation'
  | 'revokeOrganizationInvitation'
  | 'listMyOrganizationInvitations'
  | 'acceptOrganizationInvitation'
  | 'declineOrganizationInvitation'
  | 'submitOrganizationVerification'
  | 'listOrganizationVerifications'
  | 'approveOrganizationVerification'
  | 'rejectOrganizationVerification';

function invitationResource(invitation: { id: string; status: string }): IdempotentResource {
  return { type: 'organization_invitation', id: invitation.id, status: invitation.status, location: `/api/me/organization-invitations/${invitation.id}` };
}

/** Organisations, their members and invitations (who may call each: the contract's x-access rules and the service's member rules). */
function organizationResource(organization: { id: string; status: string }): IdempotentResource {
  return { type: 'organization', id: organization.id, status: organization.status, location: `/api/business/organizations/${organization.id}` };
}

export function organizationHandlers(organizations: OrganizationService, verifications: VerificationService): Handlers<OrganizationOperation> {
  return {
    async createOrganization({ trx, caller, body }) {
      const data = await organizations.create(trx, caller.userId, {
        legalName: body.legal_name,
        tradingName: body.trading_name,
        country: body.country,
        registrationNumber: body.registration_number,
        legalForm: body.legal_form,
        defaultCurrency: body.default_currency,
      });
      return { status: 201, data, resource: organizationResource(data) };
    },
    getOrganization: async ({ organization }) => ({ data: await organizations.get(organization.id) }),
    updateOrganization: async ({ organization, caller, body }) => ({
      data: await organizations.update(organization.id, caller.userId, { tradingName: body.trading_name, supportEmail: body.support_email, supportPhone: body.support_phone }),
    }),
    listOrganizationMembers: async ({ organization, query }) => ({ data: await organizations.listMembers(organization, pageRequest(query)) }),
    updateOrganizationMember: async ({ organization, caller, path, body }) => ({ data: await organizations.changeRole(organization.id, caller.userId, path.userId, body.role) }),
    removeOrganizationMember: async ({ organization, caller, path }) => ({ data: await organizations.removeMember(organization.id, caller.userId, path.userId) }),
    listOrganizationInvitations: async ({ organization, query }) => ({ data: await organizations.listInvitations(organization.id, pageRequest(query)) }),
    async createOrganizationInvitation({ trx, organization, caller, body }) {
      const data = await organizations.invite(trx, organization, caller.userId, { identifier: body.identifier, role: body.role });
      return { status: 201, data, resource: invitationResource(data) };
    },
    revokeOrganizationInvitation: async ({ organization, caller, path }) => ({ data: await organizations.revokeInvitation(organization.id, path.invitationId, caller.userId) }),
    listMyOrganizationInvitations: async ({ caller, query }) => ({ data: await organizations.myInvitations(caller.userId, pageRequest(query)) }),
    async acceptOrganizationInvitation({ trx, caller, path }) {
      const data = await organizations.accept(trx, caller.userId, path.invitationId);
      return { data, resource: invitationResource(data) };
    },
    async declineOrganizationInvitation({ trx, caller, path }) {
      const data = await organizations.decline(trx, caller.userId, path.invitationId);
      return { data, resource: invitationResource(data) };
    },
    async submitOrganizationVerification({ trx, organization, caller, body, files }) {
      const document = files.find((file) => file.field === 'registration_document');
      if (!document) throw ValidationError.field('body.registration_document', 'registration_document must be a file.');
      const corrections = { legalName: body.legal_name, registrationNumber: body.registration_number, legalForm: body.legal_form, country: body.country };
      const data = await verifications.submit(trx, organization.id, caller.userId, { document: document.bytes, representativeUserId: body.representative_user_id, corrections });
      return { data, resource: organizationResource(data) };
    },
    listOrganizationVerifications: async ({ caller, query }) => ({ data: await verifications.list(caller, query.status ?? 'pending', pageRequest(query)) }),
    async approveOrganizationVerification({ trx, caller, path }) {
      const data = await verifications.decide(trx, caller, path.orgId.toLowerCase(), 'verified');
      return { data, resource: organizationResource(data) };
    },
    async rejectOrganizationVerification({ trx, caller, path, body }) {
      const data = await verifications.decide(trx, caller, path.orgId.toLowerCase(), 'rejected', { requirement: body.requirement, reason: body.reason });
      return { data, resource: organizationResource(data) };
    },
  };
}
