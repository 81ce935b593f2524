import { shardIdentity, walletIdentity, type AccountIdentity } from '../ledger';
import type { PlannedPosting } from '../writes';
import { networkClearingIdentity } from './crypto-deposit-lifecycle';
import type { Rational } from './crypto-rates';

export type WithdrawalStatus = 'created' | 'queued' | 'broadcast' | 'confirming' | 'completed' | 'failed' | 'canceled';

export const FINAL_WITHDRAWAL_STATUSES: readonly WithdrawalStatus[] = ['completed', 'failed', 'canceled'];

/** A withdrawal can be canceled, and broadcast, only while nothing was sent to the network: `created` or `queued`. */
export const CANCELABLE_WITHDRAWAL_STATUSES: readonly WithdrawalStatus[] = ['created', 'queued'];

export function isCancelable(status: WithdrawalStatus): boolean {
  return CANCELABLE_WITHDRAWAL_STATUSES.includes(status);
}

/** The Travel Rule threshold: a withdrawal worth this many US dollars or more names its beneficiary. */
export const TRAVEL_RULE_THRESHOLD_USD = 1000n;

/**
 * Whether a withdrawal of `amountMinor` of an asset (exponent `exponent`) is worth at least
 * `thresholdUsd` US dollars, at the rate source's values in euros of the asset and of the
 * dollar. Exact: amount * assetInEur / usdInEur >= threshold, cross-multiplied in integers.
 */
export function travelRuleApplies(amountMinor: bigint, exponent: number, assetInEur: Rational, usdInEur: Rational, thresholdUsd: bigint = TRAVEL_RULE_THRESHOLD_USD): boolean {
  return amountMinor * assetInEur.num * usdInEur.den >= thresholdUsd * 10n ** BigInt(exponent) * assetInEur.den * usdInEur.num;
}

/** What the network reported of a broadcast withdrawal's transaction. */
export interface WithdrawalReport {
  /** Blocks on top of (and including) the transaction's: 0 while it waits in the mempool. */
  confirmations: number;
  /** The network refused or reverted it: nothing was sent. */
  failed: boolean;
}

export interface WithdrawalProgress {
  status: WithdrawalStatus;
  confirmations: number;
}

/**
 * The withdrawal after a report of its transaction, or undefined when the report changes
 * nothing. Forward only: a final withdrawal never changes; one not yet broadcast is not moved
 * by a report (only its broadcast puts it on the network); confirmations never go down; a
 * failure ends any withdrawal not final; `confirmationsRequired` makes it completed.
 */
export function withdrawalStep(current: WithdrawalProgress, report: WithdrawalReport, confirmationsRequired: number): WithdrawalProgress | undefined {
  if (FINAL_WITHDRAWAL_STATUSES.includes(current.status)) return undefined;
  if (report.failed) return { status: 'failed', confirmations: current.confirmations };
  if (isCancelable(current.status)) return undefined;
  if (report.confirmations <= current.confirmations) return undefined;
  return { status: report.confirmations >= confirmationsRequired ? 'completed' : 'confirming', confirmations: report.confirmations };
}

/** Where withdrawals wait for the network: the platform's crypto withdrawals transit account of the asset. */
export function withdrawalTransitIdentity(asset: string): AccountIdentity {
  return { ownerType: 'platform', ownerId: null, currency: asset, kind: 'rail_transit', externalRef: 'crypto:withdrawals' };
}

export interface WithdrawalMoney {
  id: string;
  userId: string;
  asset: string;
  network: string;
  amountMinor: bigint;
  feeMinor: bigint;
}

/**
 * The reserve, when the withdrawal is requested: the user's wallet pays the amount and the
 * fee to the withdrawals' transit account. ledger_post refuses it when the wallet does not
 * hold both (InsufficientFunds) or the user's outflow limits do not allow it (LimitExceeded),
 * so two withdrawals never spend the same money.
 */
export function withdrawalReservePosting(withdrawal: WithdrawalMoney): PlannedPosting {
  const total = withdrawal.amountMinor + withdrawal.feeMinor;
  return {
    kind: 'crypto.withdrawal.reserve',
    reference: withdrawal.id,
    metadata: { withdrawal_id: withdrawal.id, network: withdrawal.network, fee_minor: withdrawal.feeMinor.toString() },
    entries: [
      { account: walletIdentity(withdrawal.userId, withdrawal.asset), amountMinor: -total },
      { account: withdrawalTransitIdentity(withdrawal.asset), amountMinor: total },
    ],
  };
}

/**
 * The settlement, once: completed, the amount goes out to the network's clearing account and
 * the fee to the platform's fees (it pays the network); failed or canceled, the amount and the
 * fee return to the wallet (even a frozen one: it is the user's own money coming back).
 */
export function withdrawalSettlementPosting(withdrawal: WithdrawalMoney, outcome: 'completed' | 'failed' | 'canceled'): PlannedPosting {
  const total = withdrawal.amountMinor + withdrawal.feeMinor;
  const entries: PlannedPosting['entries'] =
    outcome === 'completed'
      ? [
          { account: withdrawalTransitIdentity(withdrawal.asset), amountMinor: -total },
          { account: networkClearingIdentity(withdrawal.asset, withdrawal.network), amountMinor: withdrawal.amountMinor },
          ...(withdrawal.feeMinor > 0n ? [{ account: shardIdentity('fees', withdrawal.asset, withdrawal.id), amountMinor: withdrawal.feeMinor }] : []),
        ]
      : [
          { account: withdrawalTransitIdentity(withdrawal.asset), amountMinor: -total },
          { account: walletIdentity(withdrawal.userId, withdrawal.asset), amountMinor: total },
        ];
  return {
    kind: 'crypto.withdrawal.settlement',
    reference: withdrawal.id,
    metadata: { withdrawal_id: withdrawal.id, status: outcome },
    allowFrozen: outcome !== 'completed',
    entries,
  };
}
