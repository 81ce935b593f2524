import { pageRequest, type Handlers } from '../../contract';
import type { TransferService } from './transfers-service';

/** POST /transfers, GET /transfers, GET /transfers/{transferId}. */
export function transfersHandlers(transfers: TransferService): Handlers<'createTransfer' | 'listTransfers' | 'getTransfer'> {
  return {
    async createTransfer({ caller, key, body }) {
      const data = await transfers.create(caller, key, body);
      return { data, headers: { Location: `/api/transfers/${data.id}` } };
    },
    listTransfers: async ({ caller, query }) => ({ data: await transfers.list(caller, pageRequest(query)) }),
    getTransfer: async ({ caller, path }) => ({ data: await transfers.get(caller, path.transferId) }),
  };
}
