import type { Knex } from 'knex';
import { minorToNumber, toBigInt } from '../ledger';
import { CLAIMED, readLocked } from '../writes';
import type { Refund, RefundReason, RefundStatus } from './refund-settlement';

type Db = Knex | Knex.Transaction;

interface RefundRow {
  id: string;
  organization_id: string;
  payment_id: string;
  account_id: string;
  currency: string;
  amount_minor: string | number;
  reason: RefundReason;
  status: RefundStatus;
  failure_code: string | null;
  requested_by_user_id: string | null;
  hold_posting_id: string | null;
  settlement_posting_id: string | null;
  settled_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

const date = (value: Date | string) => (value instanceof Date ? value : new Date(value));

function toRefund(row: RefundRow): Refund {
  return {
    id: row.id,
    organizationId: row.organization_id,
    paymentId: row.payment_id,
    accountId: row.account_id,
    currency: row.currency.trim(),
    amountMinor: toBigInt(row.amount_minor),
    reason: row.reason,
    status: row.status,
    failureCode: row.failure_code,
    requestedByUserId: row.requested_by_user_id,
    holdPostingId: row.hold_posting_id,
    settlementPostingId: row.settlement_posting_id,
    settledAt: row.settled_at === null ? null : date(row.settled_at),
    createdAt: date(row.created_at),
    updatedAt: date(row.updated_at),
  };
}

/** The row a decision inserts (its hold posting's id comes from the decision). */
export function toInsert(refund: Refund): Record<string, unknown> {
  return {
    organization_id: refund.organizationId,
    payment_id: refund.paymentId,
    account_id: refund.accountId,
    currency: refund.currency,
    amount_minor: refund.amountMinor.toString(),
    reason: refund.reason,
    status: refund.status,
    requested_by_user_id: refund.requestedByUserId,
    created_at: refund.createdAt.toISOString(),
    updated_at: refund.updatedAt.toISOString(),
  };
}

/** The API's Refund. */
export function presentRefund(refund: Refund, exponent: number) {
  return {
    id: refund.id,
    object: 'refund' as const,
    payment_id: refund.paymentId,
    status: refund.status,
    amount: minorToNumber(refund.amountMinor, exponent),
    amount_minor: refund.amountMinor.toString(),
    currency: refund.currency,
    reason: refund.reason,
    failure_code: refund.failureCode,
    created_at: refund.createdAt.toISOString(),
    updated_at: refund.updatedAt.toISOString(),
    settled_at: refund.settledAt?.toISOString() ?? null,
  };
}

export type RefundView = ReturnType<typeof presentRefund>;

/** A payment as a refund's decision needs it, read under its lock. */
export interface PaymentForRefund {
  id: string;
  organization_id: string;
  status: string;
  currency: string;
  amount_minor: string | number;
  exponent: number;
  credited_account_id: string | null;
  refunded_minor: string | number;
}

export class RefundRepository {
  constructor(private readonly db: Db) {}

  /** The request's read (after its key's claim): the payment locked, the account it credited, what its refunds took. */
  readPayment(trx: Knex.Transaction, organizationId: string, paymentId: string): Promise<PaymentForRefund | undefined> {
    return readLocked<PaymentForRefund>(
      trx,
      `SELECT p.id, p.organization_id, p.status, p.currency, p.amount_minor, cur.exponent,
              (SELECT en.account_id FROM entries en WHERE en.posting_id = p.posting_id AND en.amount_minor > 0 LIMIT 1) AS credited_account_id,
              (SELECT coalesce(sum(r.amount_minor), 0) FROM refunds r WHERE r.payment_id = p.id AND r.status <> 'failed') AS refunded_minor
         FROM payments p JOIN currencies cur ON cur.code = p.currency
        WHERE p.id = ?::uuid AND p.organization_id = ?::uuid AND ${CLAIMED}
          FOR UPDATE OF p`,
      [paymentId, organizationId],
    );
  }

  /** A refund locked for its settlement, with its exponent. */
  async lock(trx: Knex.Transaction, refundId: string): Promise<{ refund: Refund; exponent: number } | undefined> {
    const row = await readLocked<RefundRow & { exponent: number }>(
      trx,
      `SELECT r.*, cur.exponent FROM refunds r JOIN currencies cur ON cur.code = r.currency WHERE r.id = ?::uuid AND ${CLAIMED} FOR UPDATE OF r`,
      [refundId],
    );
    return row ? { refund: toRefund(row), exponent: Number(row.exponent) } : undefined;
  }

  async findById(refundId: string): Promise<Refund | undefined> {
    const row = (await this.db<RefundRow>('refunds').where({ id: refundId }).first()) as RefundRow | undefined;
    return row ? toRefund(row) : undefined;
  }

  async statusOf(refundId: string): Promise<RefundStatus | undefined> {
    return (await this.db<RefundRow>('refunds').where({ id: refundId }).first('status'))?.status;
  }

  /** The refunds of some payments, newest first. */
  async ofPayments(paymentIds: readonly string[]): Promise<Refund[]> {
    if (paymentIds.length === 0) return [];
    const rows = await this.db<RefundRow>('refunds').whereIn('payment_id', [...paymentIds]).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]);
    return rows.map(toRefund);
  }
}
