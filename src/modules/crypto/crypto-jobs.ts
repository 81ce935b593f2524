import type { CryptoConfig } from '../../config-crypto';
import type { PeriodicTask } from '../../jobs/periodic-task';
import type { CryptoDepositService } from './crypto-deposit-service';

/**
 * The network simulator's clock: `crypto.sandbox-mine` mines one block on every network each
 * CRYPTO_SANDBOX_BLOCK_SECONDS, which moves the deposits it follows on (and credits the final
 * ones). Only with CRYPTO_NETWORK=sandbox: a real adapter reports on its own.
 */
export function cryptoJobs(deposits: Pick<CryptoDepositService, 'tick'>, config: CryptoConfig): PeriodicTask[] {
  if (config.network !== 'sandbox') return [];
  return [{ queue: 'crypto.sandbox-mine', everySeconds: config.blockEverySeconds, run: () => deposits.tick() }];
}
