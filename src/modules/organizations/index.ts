/** Public face of the organizations module: membership, roles and the x-access check. */
export { accessRuleFor, callerMay, roleAllowed } from './access-policy';
export { OrganizationAccessService } from './organization-access-service';
export {
  FeatureUnavailableError,
  InsufficientRoleError,
  ModuleLockedError,
  OrganizationInactiveError,
  OrganizationNotFoundError,
  ORGANIZATION_NOT_FOUND_MESSAGE,
} from './organization-errors';
export { OrganizationRepository, type MemberOrganization, type OrganizationProfile } from './organization-repository';
