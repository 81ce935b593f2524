/** Public face of the wallets module. */
export { WalletService } from './wallets-service';
export { walletsHandlers } from './wallets-handlers';
