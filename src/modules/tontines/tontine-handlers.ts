import { pageRequest, type Handlers, type IdempotentResource } from '../../contract';
import type { TontineView } from './tontine-presenter';
import { CONTRIBUTION_RESOURCE, type TontineService } from './tontine-service';

/**
 * The tontine operation that moves money (a contribution, and the pot's payout when it is the
 * cycle's last): it runs in the group commit of postings, which first locks the tontine and the
 * accounts of its posting plan (lockTontinesForPostings, wired in src/services.ts). The member
 * names the wallet it debits: contributions from one wallet contend.
 */
export const tontinePostings = {
  contributeToTontine: ({ path, caller }: { path: { tontineId: string }; caller: { userId: string } }) => [{ kind: 'tontine', id: path.tontineId, userId: caller.userId }],
};

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
 * The tontine operations on the one write path (src/modules/writes): a contribution claims its
 * Idempotency-Key in the statement that locks the tontine, and completes it in the statement
 * that applies its decision.
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
    async contributeToTontine({ trx, caller, path, body }) {
      const { tontine, contributionId } = await tontines.contribute(trx, caller, path.tontineId, body);
      // The key names the contribution it paid (its status is read afresh on a replay).
      const resource = { type: CONTRIBUTION_RESOURCE, id: contributionId, status: 'paid', location: `/api/tontines/${path.tontineId}` };
      return { data: tontine, headers: location(path.tontineId), resource };
    },
    cancelTontine: async ({ trx, caller, path }) => changed(await tontines.cancel(trx, caller, path.tontineId)),
    dissolveTontine: async ({ trx, caller, path, body }) => changed(await tontines.dissolve(trx, caller, path.tontineId, body.reason)),
  };
}
