import { pageRequest, type Handlers, type IdempotentResource } from '../../contract';
import type { ApiKeyService } from './api-key-service';

type ApiKeyOperation = 'listApiKeys' | 'createApiKey' | 'getApiKey' | 'revokeApiKey' | 'rollApiKey' | 'transferApiKey';

/** The key a creation or roll acted on, as an Idempotency-Key replay names it (never with its secret). */
function keyResource(organizationId: string, key: { id: string; status: string }): IdempotentResource {
  return { type: 'api_key', id: key.id, status: key.status, location: `/api/business/organizations/${organizationId}/api-keys/${key.id}` };
}

/** Keys of an organisation, managed by its owner or admin (the x-access rule; keys themselves are refused by the mount). */
export function apiKeyHandlers(apiKeys: ApiKeyService): Handlers<ApiKeyOperation> {
  return {
    listApiKeys: async ({ organization, query }) => ({ data: await apiKeys.list(organization.id, pageRequest(query)) }),
    async createApiKey({ trx, organization, caller, body }) {
      const data = await apiKeys.create(trx, organization.id, caller.userId, { name: body.name, scopes: body.scopes, expiresAt: body.expires_at });
      return { status: 201, data, message: 'Store the secret now: it is shown only once.', resource: keyResource(organization.id, data) };
    },
    getApiKey: async ({ organization, path }) => ({ data: await apiKeys.get(organization.id, path.keyId) }),
    revokeApiKey: async ({ organization, path, caller }) => ({ data: await apiKeys.revoke(organization.id, path.keyId, caller.userId) }),
    async rollApiKey({ trx, organization, path, caller, body }) {
      const data = await apiKeys.roll(trx, organization.id, path.keyId, caller.userId, body?.expire_current_in_seconds);
      return { data, message: 'Store the new secret now: it is shown only once.', resource: keyResource(organization.id, data) };
    },
    async transferApiKey({ trx, organization, path, caller }) {
      const data = await apiKeys.transfer(trx, organization.id, path.keyId, caller.userId);
      return { data, resource: keyResource(organization.id, data) };
    },
  };
}
