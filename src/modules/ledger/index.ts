/** Public face of the ledger module: import from here, not from the files inside. */
export {
  clearingIdentity,
  ensureAccount,
  ensureAccounts,
  externalClearingAccount,
  findAccount,
  findWallets,
  fundWallet,
  listAccounts,
  platformAccount,
  ledgerRefusal,
  post,
  reconcile,
  setAccountStatus,
  shardedPlatformAccount,
  creditedAccountOf,
  platformShardOf,
  PLATFORM_SHARDS,
  shardIdentity,
  walletIdentity,
  walletOf,
  walletsOf,
} from './ledger-service';
export { currencies, type Currency } from './currency-repository';
export { formatMinor, minorToNumber, parseAmount, toBigInt, MAX_MINOR } from './money';
export type * from './ledger-types';
export { LedgerReadModel, StatementCheckpoints, type AccountEntry, type AccountState, type Cumulative, type EntryPosition } from './ledger-read-model';
export { GroupCommit, GROUP_COMMIT_MAX_ITEMS, GROUP_COMMIT_WINDOW_MS, type GroupCommitOptions } from './group-commit';
export { insufficientFunds, walletFrozen, walletRefusal, type WalletParty, type WalletPosting } from './wallet-refusals';
