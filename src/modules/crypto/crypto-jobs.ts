import type { CryptoConfig } from '../../config-crypto';
import type { PeriodicTask } from '../../jobs/periodic-task';
import type { CryptoDepositService } from './crypto-deposit-service';
import type { CryptoWithdrawalService } from './crypto-withdrawal-service';

/**
 * The network simulator's clock: `crypto.sandbox-mine` hands the network's sender the
 * withdrawals waiting for it (those the request could not hand over, or that a restart of the
 * sandbox forgot), then mines one block on every network each CRYPTO_SANDBOX_BLOCK_SECONDS, which
 * moves the deposits and withdrawals it follows on. Only with CRYPTO_NETWORK=sandbox: a real
 * adapter reports on its own.
 */
export function cryptoJobs(deposits: Pick<CryptoDepositService, 'tick'>, withdrawals: Pick<CryptoWithdrawalService, 'resubmit'>, config: CryptoConfig): PeriodicTask[] {
  if (config.network !== 'sandbox') return [];
  return [{ queue: 'crypto.sandbox-mine', everySeconds: config.blockEverySeconds, run: () => withdrawals.resubmit().then(() => deposits.tick()) }];
}
