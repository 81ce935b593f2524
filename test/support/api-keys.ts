import type { ApiKeyScope } from '../../src/contract';
import { API_KEY_SCOPES } from '../../src/modules/api-keys';
import { testKnex } from './database';
import { createMember, type TestUser } from './factories';
import type { App } from './app';

export { API_KEY_SCOPES };

export interface TestApiKey {
  id: string;
  secret: string;
  auth: { Authorization: string };
  creator: TestUser;
}

/** A key of `org` with `scopes`, made by a new owner through the service (the secret as the API answers it once). */
export async function createApiKey(app: App, org: { id: string }, scopes: readonly ApiKeyScope[], options: { expiresAt?: string; creator?: TestUser } = {}): Promise<TestApiKey> {
  const creator = options.creator ?? (await createMember(org, 'owner'));
  const key = await app.services.apiKeys.create(testKnex(), org.id, creator.id, { name: `Key ${scopes.join(' ')}`.slice(0, 100), scopes, expiresAt: options.expiresAt });
  return { id: key.id, secret: key.secret, auth: { Authorization: `Bearer ${key.secret}` }, creator };
}

/** Makes a key expired (its expiry a second in the past, its creation before it). */
export async function expireApiKey(keyId: string): Promise<void> {
  await testKnex().raw(`UPDATE api_keys SET created_at = now() - interval '2 days', expires_at = now() - interval '1 second' WHERE id = ?`, [keyId]);
}
