import type { Knex } from 'knex';
import { isUuid } from '../../ids';
import type { AccessRule, AuthorizedOrganization } from '../../contract';
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
    if (!rule.roles.includes(organization.role)) throw new InsufficientRoleError();
    if (rule.module !== null) {
      const access = organization.moduleAccess[rule.module];
      if (!access) throw new FeatureUnavailableError(rule.module);
      if (rule.write && access !== 'open') throw new ModuleLockedError(rule.module);
    }
    if (rule.requiresActiveOrg && organization.status !== 'active') throw new OrganizationInactiveError();
    return organization;
  }

  /** Organisations where the user is an active member, by name. */
  async activeOrganizationsOf(userId: string): Promise<MemberOrganization[]> {
    return new OrganizationRepository(this.knex).listActiveForMember(userId);
  }
}
