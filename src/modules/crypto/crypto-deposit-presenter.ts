import { HELD_PAYOUT_REASON, payoutState } from '../held-payouts';
import { formatMinor } from '../ledger';
import { cryptoCatalog, type AssetCode, type NetworkCode } from './crypto-catalog';
import type { DepositStatus } from './crypto-deposit-lifecycle';

/** A deposit as stored (crypto_deposits). */
export interface Deposit {
  id: string;
  userId: string;
  depositAddressId: string;
  asset: string;
  network: string;
  address: string;
  txHash: string;
  outputIndex: number;
  amountMinor: bigint;
  status: DepositStatus;
  confirmations: number;
  confirmationsRequired: number;
  creditPostingId: string | null;
  /** The held payout of its credit, when its owner's limits refused it once final (and when it was held). */
  heldPayoutId: string | null;
  heldAt: Date | null;
  failureReason: string | null;
  detectedAt: Date;
  completedAt: Date | null;
  reversedAt: Date | null;
  failedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export type DepositRow = Record<string, unknown>;

const dateOrNull = (value: unknown): Date | null => (value === null || value === undefined ? null : new Date(value as string));

export function toDeposit(row: DepositRow): Deposit {
  return {
    id: row.id as string,
    userId: row.user_id as string,
    depositAddressId: row.deposit_address_id as string,
    asset: (row.asset as string).trim(),
    network: row.network as string,
    address: row.address as string,
    txHash: row.tx_hash as string,
    outputIndex: Number(row.output_index),
    amountMinor: BigInt(row.amount_minor as string),
    status: row.status as DepositStatus,
    confirmations: Number(row.confirmations),
    confirmationsRequired: Number(row.confirmations_required),
    creditPostingId: (row.credit_posting_id as string | null) ?? null,
    heldPayoutId: (row.held_payout_id as string | null) ?? null,
    heldAt: dateOrNull(row.held_at),
    failureReason: (row.failure_reason as string | null) ?? null,
    detectedAt: new Date(row.detected_at as string),
    completedAt: dateOrNull(row.completed_at),
    reversedAt: dateOrNull(row.reversed_at),
    failedAt: dateOrNull(row.failed_at),
    createdAt: new Date(row.created_at as string),
    updatedAt: new Date(row.updated_at as string),
  };
}

/** The row write_apply inserts or updates (JSON: bigints as strings, dates as ISO strings). */
export function depositColumns(deposit: Deposit): Record<string, unknown> {
  const iso = (date: Date | null) => date?.toISOString() ?? null;
  return {
    user_id: deposit.userId,
    deposit_address_id: deposit.depositAddressId,
    asset: deposit.asset as AssetCode,
    network: deposit.network as NetworkCode,
    address: deposit.address,
    tx_hash: deposit.txHash,
    output_index: deposit.outputIndex,
    amount_minor: deposit.amountMinor.toString(),
    status: deposit.status,
    confirmations: deposit.confirmations,
    confirmations_required: deposit.confirmationsRequired,
    failure_reason: deposit.failureReason,
    held_payout_id: deposit.heldPayoutId,
    held_at: iso(deposit.heldAt),
    detected_at: iso(deposit.detectedAt),
    completed_at: iso(deposit.completedAt),
    reversed_at: iso(deposit.reversedAt),
    failed_at: iso(deposit.failedAt),
    created_at: iso(deposit.createdAt),
    updated_at: iso(deposit.updatedAt),
  };
}

/** The contract's `CryptoDeposit`. */
export function presentDeposit(deposit: Deposit) {
  const exponent = cryptoCatalog.asset(deposit.asset)?.exponent ?? 6;
  const iso = (date: Date | null) => date?.toISOString() ?? null;
  return {
    id: deposit.id,
    object: 'crypto_deposit' as const,
    asset: deposit.asset as AssetCode,
    network: deposit.network as NetworkCode,
    address: deposit.address,
    tx_hash: deposit.txHash,
    output_index: deposit.outputIndex,
    amount: formatMinor(deposit.amountMinor, exponent),
    amount_minor: deposit.amountMinor.toString(),
    status: deposit.status,
    confirmations: deposit.confirmations,
    confirmations_required: deposit.confirmationsRequired,
    failure_reason: deposit.failureReason,
    detected_at: deposit.detectedAt.toISOString(),
    completed_at: iso(deposit.completedAt),
    reversed_at: iso(deposit.reversedAt),
    failed_at: iso(deposit.failedAt),
    created_at: deposit.createdAt.toISOString(),
    updated_at: deposit.updatedAt.toISOString(),
    ...(deposit.heldPayoutId === null ? {} : { credit: creditState(deposit, deposit.heldPayoutId) }),
  };
}

/** What a deposit shows of its held credit (the contract's `HeldPayoutState`): held while the deposit is, completed with it. */
function creditState(deposit: Deposit, heldPayoutId: string) {
  const completed = deposit.status === 'completed';
  return payoutState({
    id: heldPayoutId,
    status: completed ? 'completed' : 'held_for_verification',
    reason: HELD_PAYOUT_REASON,
    heldAt: deposit.heldAt ?? deposit.updatedAt,
    settledAt: completed ? deposit.completedAt : null,
  });
}

export type DepositView = ReturnType<typeof presentDeposit>;
