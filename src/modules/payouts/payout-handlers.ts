import { pageRequest, toListPage, type Handlers } from '../../contract';
import type { PayoutRequest, PayoutService } from './payout-service';
import { payoutResource } from './payout-service';

type PayoutOperation = 'createPayout' | 'listPayouts' | 'getPayout' | 'approvePayout' | 'cancelPayout' | 'getPayoutSettings' | 'updatePayoutSettings';

/** The payout operations on the one write path: the key is claimed in the read that locks the account or the payout. */
export const payoutWritePath = ['createPayout', 'approvePayout', 'cancelPayout'] as const satisfies readonly PayoutOperation[];

export function payoutHandlers(payouts: PayoutService): Handlers<PayoutOperation> {
  return {
    async createPayout({ trx, organization, caller, body }) {
      const created = await payouts.create(trx, organization.id, body as PayoutRequest, caller.apiKey ? null : caller.userId);
      // The rail is asked once the payout (and its reserve) has committed.
      const afterCommit = async () => ({ status: 201 as const, data: await created.pay() });
      return { status: 201, data: created.view, resource: payoutResource(created.payout), afterCommit };
    },
    async approvePayout({ trx, organization, caller, path }) {
      const approved = await payouts.approve(trx, organization.id, path.payoutId, caller.apiKey ? null : caller.userId);
      const afterCommit = async () => ({ data: await approved.pay() });
      return { data: approved.view, resource: payoutResource(approved.payout), afterCommit };
    },
    async cancelPayout({ trx, organization, caller, path }) {
      const canceled = await payouts.cancel(trx, organization.id, path.payoutId, caller.apiKey ? null : caller.userId);
      return { data: canceled.view, resource: payoutResource(canceled.payout) };
    },
    async listPayouts({ organization, query }) {
      const page = pageRequest(query);
      return { data: toListPage(await payouts.list(organization.id, { ...page, status: query.status }), page.limit) };
    },
    getPayout: async ({ organization, path }) => ({ data: await payouts.get(organization.id, path.payoutId) }),
    getPayoutSettings: async ({ organization }) => ({ data: await payouts.settings(organization.id) }),
    updatePayoutSettings: async ({ organization, body }) => ({ data: await payouts.updateSettings(organization.id, body.approval_threshold_xof) }),
  };
}
