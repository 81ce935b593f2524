import { pageRequest, type Handlers } from '../../contract';
import { topUpResource } from './top-up-settlement';
import type { TopUpService } from './top-up-service';
import type { CollectionOutcome } from './mobile-money-rail';

type TopUpOperation = 'createTopUp' | 'listTopUps' | 'getTopUp' | 'receiveMobileMoneyCallback' | 'approveTestHelperTopUp' | 'declineTestHelperTopUp';

/** The top-up operations on the one write path: the request's key is claimed in the read of the wallet. */
export const topUpWritePath = ['createTopUp'] as const satisfies readonly TopUpOperation[];

/**
 * The top-up operations of the contract. `decide` tells the sandbox rail the payer's answer
 * (the test helpers, mounted outside production only).
 */
export function topUpHandlers(topUps: TopUpService, decide: (providerReference: string, outcome: CollectionOutcome) => void): Handlers<TopUpOperation> {
  return {
    async createTopUp({ trx, caller, path, body }) {
      const created = await topUps.create(trx, caller.userId, path.walletId, body);
      // The rail is asked once the top-up has committed (a rail never hears of a top-up that is
      // not recorded); the request, recorded with the top-up, is retried by the job until taken.
      const afterCommit = async () => {
        await topUps.requestCollection(created.topUp.id);
        return { status: 202 as const, data: created.view };
      };
      return { status: 202, data: created.view, resource: topUpResource(created.topUp), afterCommit };
    },
    listTopUps: async ({ caller, path, query }) => ({ data: await topUps.list(caller.userId, path.walletId, pageRequest(query)) }),
    getTopUp: async ({ caller, path }) => ({ data: await topUps.get(caller.userId, path.walletId, path.topUpId) }),
    async receiveMobileMoneyCallback({ headers, rawBody, body }) {
      const signed = { id: headers['webhook-id'], timestamp: headers['webhook-timestamp'], signature: headers['webhook-signature'] };
      const topUp = await topUps.receiveCallback(signed, rawBody ?? '', body);
      return { data: { object: 'rail_callback' as const, provider_reference: topUp.providerReference, status: topUp.status } };
    },
    approveTestHelperTopUp: async ({ path }) => ({ data: await topUps.decideInSandbox(path.topUpId, { status: 'succeeded' }, decide) }),
    declineTestHelperTopUp: async ({ path }) => ({ data: await topUps.decideInSandbox(path.topUpId, { status: 'failed', failureCode: 'declined' }, decide) }),
  };
}

