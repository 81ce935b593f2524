import { describe, expect, it } from 'vitest';
import { apiKeySecretMatches, parseApiKey } from '../../src/modules/api-keys';
import { seedApiKeys } from '../../src/seed/api-keys-seed';
import { DEMO_ORGANIZATION_NAME, seedIdentity } from '../../src/seed/identity-seed';
import { testConfig } from '../support/app';
import { inRolledBackSeed } from '../support/seed';

describe('API keys demo seed step', () => {
  it('gives "Demo Trading SARL" one key made by its owner: the secret only in the report, its hash in the table, its event written', async () => {
    await inRolledBackSeed([seedIdentity, seedApiKeys], async (trx, _services, report) => {
      expect(report.demoApiKey?.organization).toBe(DEMO_ORGANIZATION_NAME);
      const secret = report.demoApiKey?.secret as string;
      const parsed = parseApiKey(secret, 'test');
      expect(parsed).toBeDefined();
      const keys = await trx('api_keys as k')
        .join('organizations as o', 'o.id', 'k.organization_id')
        .join('users as u', 'u.id', 'k.created_by')
        .join('api_key_secrets as s', 's.api_key_id', 'k.id')
        .where('o.name', DEMO_ORGANIZATION_NAME)
        .select('k.id', 'u.email', 's.public_id', 's.secret_hash', 'k.revoked_at');
      expect(keys).toHaveLength(1);
      expect(keys[0]).toMatchObject({ email: 'owner@demo.example', public_id: parsed?.publicId, revoked_at: null });
      expect(apiKeySecretMatches(testConfig().apiKeys.pepper, parsed?.publicId as string, parsed?.secret as string, keys[0].secret_hash)).toBe(true);
      expect(JSON.stringify(keys)).not.toContain(parsed?.secret);
      const events = await trx('events').where({ subject_type: 'api_key', subject_id: keys[0].id }).select('type');
      expect(events).toEqual([{ type: 'api_key.created' }]);
    });
  });
});
