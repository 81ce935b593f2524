import type { operations } from '../../../generated/openapi';
import type { TontineService } from './tontine-service';

/**
 * The tontine operations of the contract as plain functions keyed by operationId: typed input
 * (path, query, body, Idempotency-Key, the authenticated caller) to typed data and status.
 * No HTTP framework here; an adapter mounts them.
 */

type Op = keyof operations;
type PathOf<K extends Op> = operations[K]['parameters'] extends { path: infer P } ? P : undefined;
type QueryOf<K extends Op> = operations[K]['parameters'] extends { query?: infer Q } ? NonNullable<Q> : undefined;
type BodyOf<K extends Op> = operations[K] extends { requestBody: { content: { 'application/json': infer B } } }
  ? B
  : operations[K] extends { requestBody?: { content: { 'application/json': infer B } } }
    ? B | undefined
    : undefined;
type Success<K extends Op> = operations[K]['responses'] extends infer R ? (200 extends keyof R ? R[200] : 201 extends keyof R ? R[201] : never) : never;
type DataOf<K extends Op> = Success<K> extends { content: { 'application/json': { data: infer D } } } ? D : never;

export interface HandlerInput<K extends Op> {
  caller: { userId: string };
  path: PathOf<K>;
  query: QueryOf<K>;
  body: BodyOf<K>;
  idempotencyKey?: string;
}

export interface HandlerResult<K extends Op> {
  status: 200 | 201;
  data: DataOf<K>;
  headers?: Record<string, string>;
}

export type TontineOperation =
  | 'listTontines'
  | 'createTontine'
  | 'getTontine'
  | 'inviteToTontine'
  | 'joinTontine'
  | 'leaveTontine'
  | 'startTontine'
  | 'contributeToTontine'
  | 'cancelTontine';

export type TontineHandlers = { [K in TontineOperation]: (input: HandlerInput<K>) => Promise<HandlerResult<K>> };

const location = (id: string) => ({ Location: `/api/tontines/${id}` });

export function tontineHandlers(tontines: TontineService): TontineHandlers {
  return {
    listTontines: async ({ caller, query }) => ({
      status: 200,
      data: await tontines.list(caller.userId, { limit: query.limit ?? 50, startingAfter: query.starting_after, status: query.status }),
    }),
    createTontine: async ({ caller, body }) => {
      const data = await tontines.create(caller.userId, body);
      return { status: 201, data, headers: location(data.id) };
    },
    getTontine: async ({ caller, path }) => ({ status: 200, data: await tontines.get(caller.userId, path.tontineId) }),
    inviteToTontine: async ({ caller, path, body }) => ({ status: 201, data: await tontines.invite(caller.userId, path.tontineId, body.identifier) }),
    joinTontine: async ({ caller, path }) => ({ status: 200, data: await tontines.join(caller.userId, path.tontineId) }),
    leaveTontine: async ({ caller, path }) => ({ status: 200, data: await tontines.leave(caller.userId, path.tontineId) }),
    startTontine: async ({ caller, path }) => ({ status: 200, data: await tontines.start(caller.userId, path.tontineId) }),
    contributeToTontine: async ({ caller, path, body, idempotencyKey }) => ({
      status: 200,
      data: await tontines.contribute(caller.userId, path.tontineId, idempotencyKey ?? '', body),
      headers: location(path.tontineId),
    }),
    cancelTontine: async ({ caller, path }) => ({ status: 200, data: await tontines.cancel(caller.userId, path.tontineId) }),
  };
}
