/**
 * Scopes of API keys, pure. A scope is `<resource>:read` or `<resource>:write`;
 * write includes read. Each Business operation names the scope it needs in its `x-access`
 * rule (the contract); the list of resources is the contract's ApiKeyScope enum.
 */
import type { Schemas } from '../../contract';

export type ApiKeyScope = Schemas['ApiKeyScope'];

export const API_KEY_RESOURCES = ['payment_links', 'payments', 'payouts', 'invoices', 'accounts', 'network_status', 'events', 'webhook_endpoints', 'crypto'] as const;

/** Resources a key may read but never change (a key never manages members). */
export const API_KEY_READ_ONLY_RESOURCES = ['members'] as const;

export const API_KEY_SCOPES = [
  ...API_KEY_RESOURCES.flatMap((resource) => [`${resource}:read`, `${resource}:write`]),
  ...API_KEY_READ_ONLY_RESOURCES.map((resource) => `${resource}:read`),
] as ApiKeyScope[];

function split(scope: string): { resource: string; level: string } {
  const at = scope.lastIndexOf(':');
  return { resource: scope.slice(0, at), level: scope.slice(at + 1) };
}

/** Whether the granted scopes allow `required`: the same scope, or the write scope of a read's resource. */
export function scopeGrants(granted: readonly string[], required: string): boolean {
  const need = split(required);
  if (need.level !== 'read' && need.level !== 'write') return false;
  return granted.some((scope) => {
    const have = split(scope);
    return have.resource === need.resource && (have.level === need.level || (need.level === 'read' && have.level === 'write'));
  });
}

/** The scopes any of which allows `required` (the X-Accepted-Scopes header): a read is also allowed by the write. */
export function acceptedScopes(required: string): string[] {
  const need = split(required);
  return need.level === 'read' ? [required, `${need.resource}:write`] : [required];
}

/** The scopes without repeats, in the contract's order (write after read of each resource). */
export function normalizeScopes(scopes: readonly string[]): ApiKeyScope[] {
  return API_KEY_SCOPES.filter((scope) => scopes.includes(scope));
}
