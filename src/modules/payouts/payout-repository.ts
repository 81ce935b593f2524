import type { Knex } from 'knex';
import { Keyset, type PageRequest } from '../../db/keyset';
import { minorToNumber, toBigInt } from '../ledger';
import { CLAIMED, readLocked } from '../writes';
import type { Payout, PayoutDestination, PayoutStatus } from './payout-plan';

type Db = Knex | Knex.Transaction;

interface PayoutRow {
  id: string;
  organization_id: string;
  account_id: string;
  ledger_account_id: string;
  currency: string;
  amount_minor: string | number;
  destination: PayoutDestination | string;
  reference: string | null;
  status: PayoutStatus;
  requires_approval: boolean;
  failure_code: string | null;
  requested_by_user_id: string | null;
  approved_by_user_id: string | null;
  settled_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

const date = (value: Date | string) => (value instanceof Date ? value : new Date(value));

function toPayout(row: PayoutRow): Payout {
  return {
    id: row.id,
    organizationId: row.organization_id,
    accountId: row.account_id,
    ledgerAccountId: row.ledger_account_id,
    currency: row.currency.trim(),
    amountMinor: toBigInt(row.amount_minor),
    destination: typeof row.destination === 'string' ? (JSON.parse(row.destination) as PayoutDestination) : row.destination,
    reference: row.reference,
    status: row.status,
    requiresApproval: row.requires_approval,
    failureCode: row.failure_code,
    requestedByUserId: row.requested_by_user_id,
    approvedByUserId: row.approved_by_user_id,
    settledAt: row.settled_at === null ? null : date(row.settled_at),
    createdAt: date(row.created_at),
    updatedAt: date(row.updated_at),
  };
}

/** The row a decision inserts (its reserve posting's id comes from the decision). */
export function toInsert(payout: Payout): Record<string, unknown> {
  return {
    organization_id: payout.organizationId,
    account_id: payout.accountId,
    ledger_account_id: payout.ledgerAccountId,
    currency: payout.currency,
    amount_minor: payout.amountMinor.toString(),
    destination: payout.destination,
    reference: payout.reference,
    status: payout.status,
    requires_approval: payout.requiresApproval,
    requested_by_user_id: payout.requestedByUserId,
    created_at: payout.createdAt.toISOString(),
    updated_at: payout.updatedAt.toISOString(),
  };
}

/** The API's Payout. */
export function presentPayout(payout: Payout, exponent: number) {
  return {
    id: payout.id,
    object: 'payout' as const,
    account_id: payout.accountId,
    status: payout.status,
    amount: minorToNumber(payout.amountMinor, exponent),
    amount_minor: payout.amountMinor.toString(),
    currency: payout.currency,
    destination: payout.destination,
    reference: payout.reference,
    failure_code: payout.failureCode,
    requires_approval: payout.requiresApproval,
    requested_by: payout.requestedByUserId,
    approved_by: payout.approvedByUserId,
    created_at: payout.createdAt.toISOString(),
    updated_at: payout.updatedAt.toISOString(),
    settled_at: payout.settledAt?.toISOString() ?? null,
  };
}

export type PayoutView = ReturnType<typeof presentPayout>;

/** What a payout's request reads under the account's lock: the organisation's standing and the account. */
export interface AccountForPayout {
  verification_status: string;
  payout_approval_threshold_xof: string | number | null;
  account_id: string;
  ledger_account_id: string;
  currency: string;
  exponent: number;
}

const PAYOUTS = new Keyset({ table: 'payouts', alias: 'po', noun: 'a payout of this organisation' });

export class PayoutRepository {
  constructor(private readonly db: Db) {}

  /** The request's read (after its key's claim): the organisation account locked, with the organisation's verification and threshold. */
  readAccount(trx: Knex.Transaction, organizationId: string, accountId: string): Promise<AccountForPayout | undefined> {
    return readLocked<AccountForPayout>(
      trx,
      `SELECT o.verification_status, o.payout_approval_threshold_xof, a.id AS account_id, a.ledger_account_id, a.currency, cur.exponent
         FROM organization_accounts a JOIN organizations o ON o.id = a.organization_id JOIN currencies cur ON cur.code = a.currency
        WHERE a.id = ?::uuid AND a.organization_id = ?::uuid AND ${CLAIMED}
          FOR UPDATE OF a`,
      [accountId, organizationId],
    );
  }

  /** A payout of the organisation locked for an action or its settlement, with its exponent. */
  async lock(trx: Knex.Transaction, organizationId: string | null, payoutId: string): Promise<{ payout: Payout; exponent: number } | undefined> {
    const row = await readLocked<PayoutRow & { exponent: number }>(
      trx,
      `SELECT po.*, cur.exponent FROM payouts po JOIN currencies cur ON cur.code = po.currency
        WHERE po.id = ?::uuid AND (?::uuid IS NULL OR po.organization_id = ?::uuid) AND ${CLAIMED} FOR UPDATE OF po`,
      [payoutId, organizationId, organizationId],
    );
    return row ? { payout: toPayout(row), exponent: Number(row.exponent) } : undefined;
  }

  async find(organizationId: string, payoutId: string): Promise<Payout | undefined> {
    const row = (await this.db<PayoutRow>('payouts').where({ id: payoutId, organization_id: organizationId }).first()) as PayoutRow | undefined;
    return row ? toPayout(row) : undefined;
  }

  async findById(payoutId: string): Promise<Payout | undefined> {
    const row = (await this.db<PayoutRow>('payouts').where({ id: payoutId }).first()) as PayoutRow | undefined;
    return row ? toPayout(row) : undefined;
  }

  async statusOf(payoutId: string): Promise<PayoutStatus | undefined> {
    return (await this.db<PayoutRow>('payouts').where({ id: payoutId }).first('status'))?.status;
  }

  /** A page of the organisation's payouts, newest first. */
  async list(organizationId: string, filter: PageRequest & { status?: PayoutStatus }): Promise<Payout[]> {
    const query = this.db('payouts as po').select('po.*').where('po.organization_id', organizationId);
    if (filter.status) query.andWhere('po.status', filter.status);
    return (await PAYOUTS.rows<PayoutRow>(this.db, query, { organization_id: organizationId }, filter)).map(toPayout);
  }

  async thresholdXof(organizationId: string): Promise<bigint | null | undefined> {
    const row = (await this.db('organizations').where({ id: organizationId }).first('payout_approval_threshold_xof')) as { payout_approval_threshold_xof: string | number | null } | undefined;
    if (!row) return undefined;
    return row.payout_approval_threshold_xof === null ? null : toBigInt(row.payout_approval_threshold_xof);
  }

  async setThresholdXof(organizationId: string, thresholdXof: bigint): Promise<void> {
    await this.db('organizations').where({ id: organizationId }).update({ payout_approval_threshold_xof: thresholdXof.toString() });
  }
}
