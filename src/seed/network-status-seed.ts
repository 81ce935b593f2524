import type { Knex } from 'knex';
import type { Services } from '../services';
import { DEMO_ORGANIZATION_NAME, DEMO_USERS, findDemoOrganizationId, findDemoUserId } from './identity-seed';

/**
 * Seed step (after identity): "Demo Trading SARL" is published on the network (is_visible,
 * with its public address) and was opened, closed, then opened again by its owner: open at
 * version 3, with the three audit records. Written directly (the service's SET LOCAL
 * timeouts would outlive it in the seed's shared transaction).
 */
export async function seedNetworkStatus(trx: Knex.Transaction, _services: Services): Promise<void> {
  const orgId = await findDemoOrganizationId(trx, DEMO_ORGANIZATION_NAME);
  const ownerId = await findDemoUserId(trx, DEMO_USERS[0]!.email);
  const history: Array<[before: boolean | null, after: boolean]> = [
    [null, true],
    [true, false],
    [false, true],
  ];
  await trx('network_status_changes').insert(
    history.map(([before, after], version) => ({
      organization_id: orgId,
      actor_user_id: ownerId,
      before_is_open: before,
      before_version: version,
      after_is_open: after,
      after_version: version + 1,
      request_id: `seed_demo_${version + 1}`,
    })),
  );
  await trx('organization_network_status').insert({
    organization_id: orgId,
    is_open: true,
    is_visible: true,
    public_address: 'Rue du Commerce 12, Plateau, Abidjan',
    version: history.length,
    updated_by: ownerId,
    updated_at: trx.fn.now(),
  });
}
