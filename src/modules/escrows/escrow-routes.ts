import { Router, type Request, type Response } from 'express';
import { UnauthorizedError } from '../../errors';
import { sendData } from '../../http/envelope';
import type { EscrowHandlers, HandlerInput } from './escrow-handlers';

/**
 * Mounts the escrow handlers on Express until the contract-driven operation map mounts every
 * module's handlers (then this file goes). The validator has checked every input already.
 */
export function escrowRoutes(handlers: EscrowHandlers): Router {
  const router = Router();
  const input = (req: Request): HandlerInput<never> => {
    if (!req.auth) throw new UnauthorizedError();
    return {
      caller: { userId: req.auth.userId, isAdmin: req.auth.isAdmin },
      path: req.params as never,
      query: req.query as never,
      body: req.body as never,
      idempotencyKey: req.get('Idempotency-Key'),
    };
  };
  const reply = async (res: Response, result: Promise<{ status: number; headers?: Record<string, string>; data: unknown }>) => {
    const { status, headers, data } = await result;
    for (const [name, value] of Object.entries(headers ?? {})) res.setHeader(name, value);
    sendData(res, status, data);
  };
  const mount = (method: 'get' | 'post', path: string, handler: (input: HandlerInput<never>) => Promise<{ status: number; headers?: Record<string, string>; data: unknown }>) =>
    router[method](path, (req, res) => reply(res, handler(input(req))));

  mount('get', '/escrows', handlers.listEscrows as never);
  mount('post', '/escrows', handlers.createEscrow as never);
  mount('get', '/escrows/:escrowId', handlers.getEscrow as never);
  for (const action of ['fund', 'deliver', 'accept', 'dispute', 'refund', 'cancel', 'resolve'] as const) {
    mount('post', `/escrows/:escrowId/${action}`, handlers[`${action}Escrow`] as never);
  }
  mount('get', '/admin/escrows', handlers.listAllEscrows as never);
  return router;
}
