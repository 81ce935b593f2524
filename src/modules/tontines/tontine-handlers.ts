import { pageRequest, type Handlers, type IdempotentResource } from '../../contract';
import type { TontineView } from './tontine-presenter';
import type { TontineService } from './tontine-service';

/** The tontine operations of the contract: GET/POST /tontines and /tontines/{tontineId}[/...]. */
export type TontineOperation =
  | 'listTontines'
  | 'createTontine'
  | 'getTontine'
  | 'inviteToTontine'
  | 'joinTontine'
  | 'leaveTontine'
  | 'startTontine'
  | 'contributeToTontine'
  | 'cancelTontine'
  | 'dissolveTontine';

export type TontineHandlers = Handlers<TontineOperation>;

/**
 * The tontine operations on the one write path (src/modules/writes): a contribution, a window at
 * a time (APPLIED_IN_WINDOW), claims its Idempotency-Key in the statement that applies the
 * window; alone, in the statement that locks the tontine.
 */
export const tontineWritePath = ['contributeToTontine'] as const satisfies readonly TontineOperation[];

const location = (id: string) => ({ Location: `/api/tontines/${id}` });

/** The tontine a request produced or changed, as an Idempotency-Key replay names it. */
function tontineResource(tontine: Pick<TontineView, 'id' | 'status'>): IdempotentResource {
  return { type: 'tontine', id: tontine.id, status: tontine.status, location: `/api/tontines/${tontine.id}` };
}

/** Every action answers the tontine after it, in the pipeline's transaction (an Idempotency-Key completes in it). */
const changed = (data: TontineView) => ({ data, resource: tontineResource(data) });

export function tontineHandlers(tontines: TontineService): TontineHandlers {
  return {
    listTontines: async ({ caller, query }) => ({
      data: await tontines.list(caller, { ...pageRequest(query), status: query.status }),
    }),
    async createTontine({ trx, caller, body }) {
      const data = await tontines.create(trx, caller, body);
      return { data, headers: location(data.id), resource: tontineResource(data) };
    },
    getTontine: async ({ caller, path }) => ({ data: await tontines.get(caller, path.tontineId) }),
    inviteToTontine: async ({ trx, caller, path, body }) => changed(await tontines.invite(trx, caller, path.tontineId, body.identifier)),
    joinTontine: async ({ trx, caller, path }) => changed(await tontines.join(trx, caller, path.tontineId)),
    leaveTontine: async ({ trx, caller, path }) => changed(await tontines.leave(trx, caller, path.tontineId)),
    startTontine: async ({ trx, caller, path }) => changed(await tontines.start(trx, caller, path.tontineId)),
    // Applied a window at a time (APPLIED_IN_WINDOW): the pipeline hands the key over, which the window completes naming the contribution paid.
    contributeToTontine: async ({ key, caller, path, body }) => ({ data: (await tontines.contributeInWindow(key, caller, path.tontineId, body)).tontine, headers: location(path.tontineId) }),
    cancelTontine: async ({ trx, caller, path }) => changed(await tontines.cancel(trx, caller, path.tontineId)),
    dissolveTontine: async ({ trx, caller, path, body }) => changed(await tontines.dissolve(trx, caller, path.tontineId, body.reason)),
  };
}
