import { Router } from 'express';
import type { operations } from '../../../generated/openapi';
import { UnauthorizedError } from '../../errors';
import { sendData } from '../../http/envelope';
import type { IdempotencyService } from './idempotency-service';

type KeyQuery = NonNullable<operations['getIdempotencyKey']['parameters']['query']>;
type KeyStateData = operations['getIdempotencyKey']['responses']['200']['content']['application/json']['data'];

/** GET /idempotency-keys/{key}: the state of one of the caller's keys. */
export function idempotencyRoutes(idempotency: IdempotencyService): Router {
  const router = Router();
  router.get('/idempotency-keys/:key', async (req, res) => {
    if (!req.auth) throw new UnauthorizedError();
    const query = req.query as KeyQuery;
    const data: KeyStateData = await idempotency.describe(req.auth.userId, String(req.params.key), query.operation);
    sendData(res, 200, data);
  });
  return router;
}
