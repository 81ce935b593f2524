import type { Handlers } from '../../contract';
import type { WalletService } from './wallets-service';

/** GET /wallets: the caller's balances. */
export function walletsHandlers(wallets: WalletService): Handlers<'listWallets'> {
  return {
    listWallets: async ({ caller }) => ({ data: await wallets.list(caller.userId) }),
  };
}
