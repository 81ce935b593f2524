import type { Handlers } from '../../contract';
import type { LimitsService } from './limits-service';

/** GET /me/limits and GET /business/organizations/{orgId}/limits. */
export function limitsHandlers(limits: LimitsService): Handlers<'getMyLimits' | 'getOrganizationLimits'> {
  return {
    getMyLimits: async ({ caller }) => ({ data: await limits.ofUser(caller.userId) }),
    getOrganizationLimits: async ({ organization }) => ({ data: await limits.ofOrganization(organization.id) }),
  };
}
