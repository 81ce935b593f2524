import { walletIdentity, type AccountIdentity } from '../ledger';
import type { PlannedPosting } from '../writes';
import type { TransferObservation } from './crypto-network';

export type DepositStatus = 'detected' | 'confirming' | 'held_for_verification' | 'completed' | 'failed' | 'reversed';

export const FINAL_DEPOSIT_STATUSES: readonly DepositStatus[] = ['completed', 'failed', 'reversed'];

/**
 * What the network no longer changes: a final deposit, and one held for verification (final on
 * the chain, its credit waiting for its owner's limits: only the held payouts' job moves it on,
 * to `completed`).
 */
const SETTLED_ON_CHAIN: readonly DepositStatus[] = [...FINAL_DEPOSIT_STATUSES, 'held_for_verification'];

/** What a deposit shows of its progress. */
export interface DepositProgress {
  status: DepositStatus;
  confirmations: number;
}

/** A step of a deposit: its progress after an observation, and why it failed (a failed step only). */
export interface DepositStep extends DepositProgress {
  failureReason?: string;
}

/**
 * The deposit after an observation of its transfer, or undefined when the observation changes
 * nothing. States only move forward: `detected -> confirming (n of N) -> completed | failed |
 * reversed` (a `completed` step whose credit its owner's limits refuse is held instead:
 * `held_for_verification`, see heldDeposit); a final or held state never changes (a
 * reorganisation after finality leaves a completed or held deposit as it is), confirmations
 * never go down (a report older than one already applied is ignored), and a transfer first seen
 * dropped is never recorded.
 */
export function depositStep(current: DepositProgress | undefined, observation: TransferObservation, expected: { asset: string; confirmationsRequired: number }): DepositStep | undefined {
  if (current && SETTLED_ON_CHAIN.includes(current.status)) return undefined;
  if (observation.dropped) return current ? { status: 'reversed', confirmations: current.confirmations } : undefined;
  if (!current && observation.asset !== expected.asset) {
    return { status: 'failed', confirmations: observation.confirmations, failureReason: `${observation.asset} was sent to an address for ${expected.asset}` };
  }
  if (current && observation.confirmations <= current.confirmations) return undefined;
  if (observation.confirmations >= expected.confirmationsRequired) return { status: 'completed', confirmations: observation.confirmations };
  if (observation.confirmations > 0) return { status: 'confirming', confirmations: observation.confirmations };
  return current ? undefined : { status: 'detected', confirmations: 0 };
}

/** The platform's clearing account of an asset on a network: what the network owes the platform's wallets. */
export function networkClearingIdentity(asset: string, network: string): AccountIdentity {
  return { ownerType: 'platform', ownerId: null, currency: asset, kind: 'external_clearing', externalRef: `crypto:${network}` };
}

/**
 * A final deposit credits the user's wallet from the network's clearing account, once: the
 * posting's (kind, reference) is the deposit's id. Money already received on-chain is recorded
 * even in a frozen wallet (it cannot leave it while frozen).
 */
export function depositCreditPosting(deposit: { id: string; userId: string; asset: string; network: string; amountMinor: bigint; txHash: string; outputIndex: number }): PlannedPosting {
  return {
    kind: 'crypto.deposit',
    reference: deposit.id,
    metadata: { deposit_id: deposit.id, network: deposit.network, tx_hash: deposit.txHash, output_index: deposit.outputIndex },
    allowFrozen: true,
    entries: [
      { account: networkClearingIdentity(deposit.asset, deposit.network), amountMinor: -deposit.amountMinor },
      { account: walletIdentity(deposit.userId, deposit.asset), amountMinor: deposit.amountMinor },
    ],
  };
}
