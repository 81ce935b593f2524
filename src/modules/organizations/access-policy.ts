/**
 * Who may call which Business operation (/business/organizations/{orgId}/...): the rule is the
 * operation's `x-access` extension in the contract (openapi/paths/business-*.yaml), shown on
 * the API reference page and applied by the mount (src/http/mount-operations.ts) through
 * OrganizationAccessService.authorize. A Business operation without a rule is refused.
 *
 * Checks, in order:
 *   orgId not a UUID, unknown organisation, or caller not an active member -> 404 NotFound
 *     (an API key: not the key's organisation)
 *   role not in `roles`                                                 -> 403 InsufficientRole
 *     (an API key: no `scope` -> 403 ApiKeyNotAllowed; scope not granted -> 403 InsufficientScope)
 *   `module` not enabled for the organisation                           -> 403 FeatureUnavailable
 *   `write` and the module is read_only or locked                       -> 423 ModuleLocked
 *   `requiresActiveOrg` and the organisation is not active              -> 422 OrganizationInactive
 * Reads of a locked or read-only module are allowed.
 */
import { OPERATIONS, type AccessRule, type AuthorizedOrganization, type OperationId, type Role } from '../../contract';
import { scopeGrants } from '../api-keys';

export function accessRuleFor(operationId: string): AccessRule | undefined {
  if (!Object.prototype.hasOwnProperty.call(OPERATIONS, operationId)) return undefined;
  return OPERATIONS[operationId as OperationId].access ?? undefined;
}

/** Whether `role` may call `operationId` (for example to compute a `can_manage` flag). */
export function roleAllowed(operationId: OperationId, role: Role): boolean {
  return (accessRuleFor(operationId)?.roles as readonly Role[] | undefined)?.includes(role) ?? false;
}

/** Whether the caller of `organization` (a member's role, or an API key's scopes) may call `operationId`. */
export function callerMay(operationId: OperationId, organization: Pick<AuthorizedOrganization, 'role' | 'apiKeyScopes'>): boolean {
  if (organization.role !== null) return roleAllowed(operationId, organization.role);
  const scope = accessRuleFor(operationId)?.scope;
  return Boolean(scope && organization.apiKeyScopes && scopeGrants(organization.apiKeyScopes, scope));
}
