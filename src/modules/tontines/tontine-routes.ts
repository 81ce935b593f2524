import { Router, type Request, type Response } from 'express';
import { UnauthorizedError } from '../../errors';
import { sendData } from '../../http/envelope';
import type { HandlerInput, HandlerResult, TontineHandlers, TontineOperation } from './tontine-handlers';

/**
 * Temporary Express adapter of the tontine handlers, until the contract's operation map mounts
 * every handler. The validator has checked each input first.
 */
export function tontineRoutes(handlers: TontineHandlers): Router {
  const router = Router();
  const mount = <K extends TontineOperation>(method: 'get' | 'post', path: string, operation: K) => {
    router[method](path, async (req: Request, res: Response) => {
      if (!req.auth) throw new UnauthorizedError();
      const input = {
        caller: { userId: req.auth.userId },
        path: req.params,
        query: req.query,
        body: req.body,
        idempotencyKey: req.get('Idempotency-Key'),
      } as unknown as HandlerInput<K>;
      const handler = handlers[operation] as (input: HandlerInput<K>) => Promise<HandlerResult<K>>;
      const result = await handler(input);
      for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, value);
      sendData(res, result.status, result.data);
    });
  };
  mount('get', '/tontines', 'listTontines');
  mount('post', '/tontines', 'createTontine');
  mount('get', '/tontines/:tontineId', 'getTontine');
  mount('post', '/tontines/:tontineId/invitations', 'inviteToTontine');
  mount('post', '/tontines/:tontineId/join', 'joinTontine');
  mount('post', '/tontines/:tontineId/leave', 'leaveTontine');
  mount('post', '/tontines/:tontineId/start', 'startTontine');
  mount('post', '/tontines/:tontineId/contributions', 'contributeToTontine');
  mount('post', '/tontines/:tontineId/cancel', 'cancelTontine');
  return router;
}
