import { Router } from 'express';
import type { operations } from '../../../generated/openapi';
import { UnauthorizedError } from '../../errors';
import { sendData } from '../../http/envelope';
import type { WalletService } from './wallets-service';

type WalletListData = operations['listWallets']['responses']['200']['content']['application/json']['data'];

/** GET /wallets: the caller's balances. */
export function walletsRoutes(wallets: WalletService): Router {
  const router = Router();
  router.get('/wallets', async (req, res) => {
    if (!req.auth) throw new UnauthorizedError();
    const data: WalletListData = await wallets.list(req.auth.userId);
    sendData(res, 200, data);
  });
  return router;
}
