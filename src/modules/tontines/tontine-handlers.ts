import { pageRequest, type Handlers } from '../../contract';
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

const location = (id: string) => ({ Location: `/api/tontines/${id}` });

export function tontineHandlers(tontines: TontineService): TontineHandlers {
  return {
    listTontines: async ({ caller, query }) => ({
      data: await tontines.list(caller.userId, { ...pageRequest(query), status: query.status }),
    }),
    async createTontine({ caller, body }) {
      const data = await tontines.create(caller.userId, body);
      return { data, headers: location(data.id) };
    },
    getTontine: async ({ caller, path }) => ({ data: await tontines.get(caller.userId, path.tontineId) }),
    inviteToTontine: async ({ caller, path, body }) => ({ data: await tontines.invite(caller.userId, path.tontineId, body.identifier) }),
    joinTontine: async ({ caller, path }) => ({ data: await tontines.join(caller.userId, path.tontineId) }),
    leaveTontine: async ({ caller, path }) => ({ data: await tontines.leave(caller.userId, path.tontineId) }),
    startTontine: async ({ caller, path }) => ({ data: await tontines.start(caller.userId, path.tontineId) }),
    contributeToTontine: async ({ caller, path, headers, body }) => ({
      data: await tontines.contribute(caller.userId, path.tontineId, headers['Idempotency-Key'], body),
      headers: location(path.tontineId),
    }),
    cancelTontine: async ({ caller, path }) => ({ data: await tontines.cancel(caller.userId, path.tontineId) }),
    dissolveTontine: async ({ caller, path, body }) => ({ data: await tontines.dissolve(caller, path.tontineId, body.reason) }),
  };
}
