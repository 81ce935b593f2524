import type { Knex } from 'knex';
import { isUuid } from '../../ids';
import type { AccessRule, ApiKeyCaller, AuthorizedOrganization } from '../../contract';
import { ApiKeyNotAllowedError, InsufficientScopeError, scopeGrants } from '../api-keys';
import {
  FeatureUnavailableError,
  InsufficientRoleError,
  ModuleLockedError,
  OrganizationInactiveError,
  OrganizationNotFoundError,
} from './organization-errors';
import { OrganizationRepository, type MemberOrganization } from './organization-repository';

/** Applies one access rule to one caller and organisation, in the order access-policy.ts lists; lists a user's memberships. */
export class OrganizationAccessService {
  constructor(private readonly knex: Knex) {}

  async authorize(organizationId: string, userId: string, rule: AccessRule): Promise<AuthorizedOrganization> {
    if (!isUuid(organizationId)) throw new OrganizationNotFoundError();
    const organization = await new OrganizationRepository(this.knex).findForMember(organizationId.toLowerCase(), userId);
    if (!organization) throw new OrganizationNotFoundError();
    if (organization.role === null || !rule.roles.includes(organization.role)) throw new InsufficientRoleError();
    return applyOrganizationRules(organization, rule);
  }

  /**
   * The same checks for an API key, its scopes in place of a role: another
   * organisation than the key's is a 404 (as for a non-member), an operation keys may not
   * call a 403 ApiKeyNotAllowed, a missing scope a 403 InsufficientScope; then the module,
   * its lock and the organisation's status as for a member.
   */
  async authorizeApiKey(organizationId: string, key: ApiKeyCaller, rule: AccessRule): Promise<AuthorizedOrganization> {
    if (!isUuid(organizationId) || organizationId.toLowerCase() !== key.organizationId) throw new OrganizationNotFoundError();
    if (rule.scope === null) throw new ApiKeyNotAllowedError();
    if (!scopeGrants(key.scopes, rule.scope)) throw new InsufficientScopeError(rule.scope, key.scopes);
    const profile = (await new OrganizationRepository(this.knex).findProfiles([key.organizationId])).get(key.organizationId);
    if (!profile) throw new OrganizationNotFoundError();
    return applyOrganizationRules({ ...profile, role: null, apiKeyScopes: key.scopes }, rule);
  }

  /** Organisations where the user is an active member, by name. */
  async activeOrganizationsOf(userId: string): Promise<MemberOrganization[]> {
    return new OrganizationRepository(this.knex).listActiveForMember(userId);
  }
}

/** The module, its lock and the organisation's status, once the caller may call the operation at all. */
function applyOrganizationRules(organization: AuthorizedOrganization, rule: AccessRule): AuthorizedOrganization {
  if (rule.module !== null) {
    const access = organization.moduleAccess[rule.module];
    if (!access) throw new FeatureUnavailableError(rule.module);
    if (rule.write && access !== 'open') throw new ModuleLockedError(rule.module);
  }
  if (rule.requiresActiveOrg && organization.status !== 'active') throw new OrganizationInactiveError();
  return organization;
}
