import { Router, type Request } from 'express';
import type { operations } from '../../../generated/openapi';
import { UnauthorizedError } from '../../errors';
import { sendData } from '../../http/envelope';
import type { TransferService } from './transfers-service';

type CreateTransferBody = operations['createTransfer']['requestBody']['content']['application/json'];
type TransferData = operations['createTransfer']['responses']['200']['content']['application/json']['data'];
type ListTransfersQuery = NonNullable<operations['listTransfers']['parameters']['query']>;
type TransferListData = operations['listTransfers']['responses']['200']['content']['application/json']['data'];
type GetTransferData = operations['getTransfer']['responses']['200']['content']['application/json']['data'];

function callerOf(req: Request): string {
  if (!req.auth) throw new UnauthorizedError();
  return req.auth.userId;
}

/** POST /transfers, GET /transfers, GET /transfers/{transferId}. The validator checked every input first. */
export function transfersRoutes(transfers: TransferService): Router {
  const router = Router();

  router.post('/transfers', async (req, res) => {
    const body = req.body as CreateTransferBody;
    // The session id goes along: transfer_create checks the session in the transfer's own statement.
    const data: TransferData = await transfers.create({ userId: callerOf(req), sessionId: req.auth?.sessionId }, req.get('Idempotency-Key') ?? '', body);
    res.setHeader('Location', `/api/transfers/${data.id}`);
    sendData(res, 200, data);
  });

  router.get('/transfers', async (req, res) => {
    const query = req.query as ListTransfersQuery;
    const data: TransferListData = await transfers.list(callerOf(req), { limit: query.limit ?? 50, startingAfter: query.starting_after });
    sendData(res, 200, data);
  });

  router.get('/transfers/:transferId', async (req, res) => {
    const data: GetTransferData = await transfers.get(callerOf(req), String(req.params.transferId));
    sendData(res, 200, data);
  });

  return router;
}
