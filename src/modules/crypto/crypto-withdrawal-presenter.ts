import { formatMinor } from '../ledger';
import { cryptoCatalog, type AssetCode, type NetworkCode } from './crypto-catalog';
import { isCancelable, type WithdrawalStatus } from './crypto-withdrawal-plan';

/** The Travel Rule data of a withdrawal: who receives it. */
export interface Beneficiary {
  name: string;
  country: string;
}

/** A withdrawal as stored (crypto_withdrawals). */
export interface Withdrawal {
  id: string;
  userId: string;
  withdrawalAddressId: string;
  asset: string;
  network: string;
  address: string;
  memo: string | null;
  amountMinor: bigint;
  feeMinor: bigint;
  beneficiary: Beneficiary | null;
  status: WithdrawalStatus;
  txHash: string | null;
  confirmations: number;
  confirmationsRequired: number;
  failureReason: string | null;
  broadcastAt: Date | null;
  completedAt: Date | null;
  failedAt: Date | null;
  canceledAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

const dateOrNull = (value: unknown): Date | null => (value === null || value === undefined ? null : new Date(value as string));

export function toWithdrawal(row: Record<string, unknown>): Withdrawal {
  const beneficiary = row.beneficiary as Beneficiary | string | null;
  return {
    id: row.id as string,
    userId: row.user_id as string,
    withdrawalAddressId: row.withdrawal_address_id as string,
    asset: (row.asset as string).trim(),
    network: row.network as string,
    address: row.address as string,
    memo: (row.memo as string | null) ?? null,
    amountMinor: BigInt(row.amount_minor as string),
    feeMinor: BigInt(row.fee_minor as string),
    beneficiary: typeof beneficiary === 'string' ? (JSON.parse(beneficiary) as Beneficiary) : (beneficiary ?? null),
    status: row.status as WithdrawalStatus,
    txHash: (row.tx_hash as string | null) ?? null,
    confirmations: Number(row.confirmations),
    confirmationsRequired: Number(row.confirmations_required),
    failureReason: (row.failure_reason as string | null) ?? null,
    broadcastAt: dateOrNull(row.broadcast_at),
    completedAt: dateOrNull(row.completed_at),
    failedAt: dateOrNull(row.failed_at),
    canceledAt: dateOrNull(row.canceled_at),
    createdAt: new Date(row.created_at as string),
    updatedAt: new Date(row.updated_at as string),
  };
}

const iso = (date: Date | null) => date?.toISOString() ?? null;

/** The row write_apply inserts (JSON: bigints as strings, dates as ISO strings); the reserve posting's id comes from the decision. */
export function withdrawalColumns(withdrawal: Withdrawal): Record<string, unknown> {
  return {
    user_id: withdrawal.userId,
    withdrawal_address_id: withdrawal.withdrawalAddressId,
    asset: withdrawal.asset,
    network: withdrawal.network,
    address: withdrawal.address,
    memo: withdrawal.memo,
    amount_minor: withdrawal.amountMinor.toString(),
    fee_minor: withdrawal.feeMinor.toString(),
    beneficiary: withdrawal.beneficiary,
    status: withdrawal.status,
    tx_hash: withdrawal.txHash,
    confirmations: withdrawal.confirmations,
    confirmations_required: withdrawal.confirmationsRequired,
    failure_reason: withdrawal.failureReason,
    broadcast_at: iso(withdrawal.broadcastAt),
    completed_at: iso(withdrawal.completedAt),
    failed_at: iso(withdrawal.failedAt),
    canceled_at: iso(withdrawal.canceledAt),
    created_at: iso(withdrawal.createdAt),
    updated_at: iso(withdrawal.updatedAt),
  };
}

/** The contract's `CryptoWithdrawal`. */
export function presentWithdrawal(withdrawal: Withdrawal) {
  const exponent = cryptoCatalog.asset(withdrawal.asset)?.exponent ?? 6;
  const total = withdrawal.amountMinor + withdrawal.feeMinor;
  return {
    id: withdrawal.id,
    object: 'crypto_withdrawal' as const,
    withdrawal_address_id: withdrawal.withdrawalAddressId,
    asset: withdrawal.asset as AssetCode,
    network: withdrawal.network as NetworkCode,
    address: withdrawal.address,
    memo: withdrawal.memo,
    amount: formatMinor(withdrawal.amountMinor, exponent),
    amount_minor: withdrawal.amountMinor.toString(),
    fee: formatMinor(withdrawal.feeMinor, exponent),
    fee_minor: withdrawal.feeMinor.toString(),
    total: formatMinor(total, exponent),
    total_minor: total.toString(),
    beneficiary: withdrawal.beneficiary,
    status: withdrawal.status,
    cancelable: isCancelable(withdrawal.status),
    tx_hash: withdrawal.txHash,
    confirmations: withdrawal.confirmations,
    confirmations_required: withdrawal.confirmationsRequired,
    failure_reason: withdrawal.failureReason,
    broadcast_at: iso(withdrawal.broadcastAt),
    completed_at: iso(withdrawal.completedAt),
    failed_at: iso(withdrawal.failedAt),
    canceled_at: iso(withdrawal.canceledAt),
    created_at: withdrawal.createdAt.toISOString(),
    updated_at: withdrawal.updatedAt.toISOString(),
  };
}

export type WithdrawalView = ReturnType<typeof presentWithdrawal>;
