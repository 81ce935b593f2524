import { pageRequest, type Handlers } from '../../contract';
import { heldPayoutResource, type HeldPayoutService } from './held-payout-service';

export function heldPayoutHandlers(heldPayouts: HeldPayoutService): Handlers<'returnHeldPayout' | 'listHeldPayouts'> {
  return {
    async listHeldPayouts({ caller, query }) {
      return { data: await heldPayouts.list(caller, { status: query.status, ...pageRequest(query) }) };
    },
    async returnHeldPayout({ trx, caller, path, body }) {
      const data = await heldPayouts.returnToPayer(trx, caller, path.heldPayoutId, body.reason);
      return { data, resource: heldPayoutResource(data) };
    },
  };
}
