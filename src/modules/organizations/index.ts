/** Public face of the organizations module: membership, roles and the x-access check; organisations run by their members. */
export { accessRuleFor, callerMay, roleAllowed } from './access-policy';
export { OrganizationAccessService } from './organization-access-service';
export {
  AlreadyMemberError,
  FeatureUnavailableError,
  InsufficientRoleError,
  InvitationExpiredError,
  InvitationNotFoundError,
  InvitationNotPendingError,
  LastOwnerError,
  MemberNotFoundError,
  ModuleLockedError,
  OrganizationInactiveError,
  OrganizationConflictOfInterestError,
  OrganizationNotFoundError,
  ORGANIZATION_NOT_FOUND_MESSAGE,
  RepresentativeNotVerifiedError,
  VerificationAlreadySubmittedError,
  VerificationNotPendingError,
} from './organization-errors';
export {
  OrganizationProfileRepository,
  OrganizationRepository,
  type LegalForm,
  type MemberOrganization,
  type OrganizationProfile,
  type OrganizationRecord,
  type VerificationStatus,
} from './organization-repository';
export { MembershipRepository, type InvitationRecord, type MemberRecord } from './membership-repository';
export { presentOrganization, presentMember, presentInvitation, type OrganizationView, type MemberView, type InvitationView } from './organization-presenter';
export { OrganizationService, assertMayManage, INVITATION_TTL_MS, type OrganizationMessage, type OrganizationServiceDeps } from './organization-service';
export { organizationHandlers } from './organization-handlers';
export { VerificationService, REPRESENTATIVE_TIER, type VerificationServiceDeps } from './verification-service';
export { businessVerificationProvider, SandboxVerificationProvider, SANDBOX_REJECTED_SUFFIX, SANDBOX_VERIFIED_SUFFIX, type ProviderDecision, type VerificationProvider } from './verification-provider';
