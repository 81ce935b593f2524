import type { Knex } from 'knex';
import { Keyset, type PageRequest } from '../../db/keyset';
import { historyColumn, historyFromColumn, type HistoryEntry } from '../events';
import { toBigInt } from '../ledger';
import { CLAIMED, readLocked } from '../writes';
import type { FeePayer } from './escrow-fee';
import type { EscrowStatus } from './escrow-lifecycle';
import type { HeldPayoutStatus } from '../held-payouts';

type Db = Knex | Knex.Transaction;

export type ResolutionOutcome = 'release' | 'refund' | 'split';

export interface Escrow {
  id: string;
  buyerUserId: string;
  sellerUserId: string;
  createdByUserId: string;
  buyerIdentifier: string;
  sellerIdentifier: string;
  status: EscrowStatus;
  currency: string;
  amountMinor: bigint;
  feeBps: number;
  feePayer: FeePayer;
  feeMinor: bigint;
  /** ESCROW_MIN_FEE of the currency when the escrow was created, in minor units (0: none). */
  feeMinimumMinor: bigint;
  buyerFeeMinor: bigint;
  sellerFeeMinor: bigint;
  description: string;
  reference: string | null;
  inspectionPeriodSeconds: number;
  trackingReference: string | null;
  deliveryNote: string | null;
  disputeReason: string | null;
  resolutionOutcome: ResolutionOutcome | null;
  resolutionSellerAmountMinor: bigint | null;
  resolutionNote: string | null;
  resolvedByUserId: string | null;
  settledToSellerMinor: bigint | null;
  settledToBuyerMinor: bigint | null;
  settledFeeMinor: bigint | null;
  fundingPostingId: string | null;
  settlementPostingId: string | null;
  fundedAt: Date | null;
  deliveredAt: Date | null;
  inspectionEndsAt: Date | null;
  autoReleaseAt: Date | null;
  acceptedAt: Date | null;
  disputedAt: Date | null;
  resolvedAt: Date | null;
  releasedAt: Date | null;
  refundedAt: Date | null;
  canceledAt: Date | null;
  /** The payout held for verification, when there is one: the seller's (a release), or the buyer's share of a split (the seller paid). */
  payoutId: string | null;
  payoutStatus: HeldPayoutStatus | null;
  payoutReason: string | null;
  payoutHeldAt: Date | null;
  payoutSettledAt: Date | null;
  payoutRecipient: 'seller' | 'buyer' | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface Row {
  id: string;
  buyer_user_id: string;
  seller_user_id: string;
  created_by_user_id: string;
  buyer_identifier: string;
  seller_identifier: string;
  status: EscrowStatus;
  currency: string;
  amount_minor: string;
  fee_bps: number;
  fee_payer: FeePayer;
  fee_minor: string;
  fee_minimum_minor: string;
  buyer_fee_minor: string;
  seller_fee_minor: string;
  description: string;
  reference: string | null;
  inspection_period_seconds: number;
  tracking_reference: string | null;
  delivery_note: string | null;
  dispute_reason: string | null;
  resolution_outcome: ResolutionOutcome | null;
  resolution_seller_amount_minor: string | null;
  resolution_note: string | null;
  resolved_by_user_id: string | null;
  settled_to_seller_minor: string | null;
  settled_to_buyer_minor: string | null;
  settled_fee_minor: string | null;
  funding_posting_id: string | null;
  settlement_posting_id: string | null;
  funded_at: Date | null;
  delivered_at: Date | null;
  inspection_ends_at: Date | null;
  auto_release_at: Date | null;
  accepted_at: Date | null;
  disputed_at: Date | null;
  resolved_at: Date | null;
  released_at: Date | null;
  refunded_at: Date | null;
  canceled_at: Date | null;
  payout_id: string | null;
  payout_status: HeldPayoutStatus | null;
  payout_reason: string | null;
  payout_held_at: Date | null;
  payout_settled_at: Date | null;
  payout_recipient: 'seller' | 'buyer' | null;
  created_at: Date;
  updated_at: Date;
}

const optionalBigInt = (value: string | null): bigint | null => (value === null ? null : toBigInt(value));

function toEscrow(row: Row): Escrow {
  return {
    id: row.id,
    buyerUserId: row.buyer_user_id,
    sellerUserId: row.seller_user_id,
    createdByUserId: row.created_by_user_id,
    buyerIdentifier: row.buyer_identifier,
    sellerIdentifier: row.seller_identifier,
    status: row.status,
    currency: row.currency,
    amountMinor: toBigInt(row.amount_minor),
    feeBps: Number(row.fee_bps),
    feePayer: row.fee_payer,
    feeMinor: toBigInt(row.fee_minor),
    feeMinimumMinor: toBigInt(row.fee_minimum_minor),
    buyerFeeMinor: toBigInt(row.buyer_fee_minor),
    sellerFeeMinor: toBigInt(row.seller_fee_minor),
    description: row.description,
    reference: row.reference,
    inspectionPeriodSeconds: Number(row.inspection_period_seconds),
    trackingReference: row.tracking_reference,
    deliveryNote: row.delivery_note,
    disputeReason: row.dispute_reason,
    resolutionOutcome: row.resolution_outcome,
    resolutionSellerAmountMinor: optionalBigInt(row.resolution_seller_amount_minor),
    resolutionNote: row.resolution_note,
    resolvedByUserId: row.resolved_by_user_id,
    settledToSellerMinor: optionalBigInt(row.settled_to_seller_minor),
    settledToBuyerMinor: optionalBigInt(row.settled_to_buyer_minor),
    settledFeeMinor: optionalBigInt(row.settled_fee_minor),
    fundingPostingId: row.funding_posting_id,
    settlementPostingId: row.settlement_posting_id,
    fundedAt: row.funded_at,
    deliveredAt: row.delivered_at,
    inspectionEndsAt: row.inspection_ends_at,
    autoReleaseAt: row.auto_release_at,
    acceptedAt: row.accepted_at,
    disputedAt: row.disputed_at,
    resolvedAt: row.resolved_at,
    releasedAt: row.released_at,
    refundedAt: row.refunded_at,
    canceledAt: row.canceled_at,
    payoutId: row.payout_id,
    payoutStatus: row.payout_status,
    payoutReason: row.payout_reason,
    payoutHeldAt: row.payout_held_at,
    payoutSettledAt: row.payout_settled_at,
    payoutRecipient: row.payout_recipient,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

const COLUMNS: Record<keyof Escrow, keyof Row> = {
  id: 'id',
  buyerUserId: 'buyer_user_id',
  sellerUserId: 'seller_user_id',
  createdByUserId: 'created_by_user_id',
  buyerIdentifier: 'buyer_identifier',
  sellerIdentifier: 'seller_identifier',
  status: 'status',
  currency: 'currency',
  amountMinor: 'amount_minor',
  feeBps: 'fee_bps',
  feePayer: 'fee_payer',
  feeMinor: 'fee_minor',
  feeMinimumMinor: 'fee_minimum_minor',
  buyerFeeMinor: 'buyer_fee_minor',
  sellerFeeMinor: 'seller_fee_minor',
  description: 'description',
  reference: 'reference',
  inspectionPeriodSeconds: 'inspection_period_seconds',
  trackingReference: 'tracking_reference',
  deliveryNote: 'delivery_note',
  disputeReason: 'dispute_reason',
  resolutionOutcome: 'resolution_outcome',
  resolutionSellerAmountMinor: 'resolution_seller_amount_minor',
  resolutionNote: 'resolution_note',
  resolvedByUserId: 'resolved_by_user_id',
  settledToSellerMinor: 'settled_to_seller_minor',
  settledToBuyerMinor: 'settled_to_buyer_minor',
  settledFeeMinor: 'settled_fee_minor',
  fundingPostingId: 'funding_posting_id',
  settlementPostingId: 'settlement_posting_id',
  fundedAt: 'funded_at',
  deliveredAt: 'delivered_at',
  inspectionEndsAt: 'inspection_ends_at',
  autoReleaseAt: 'auto_release_at',
  acceptedAt: 'accepted_at',
  disputedAt: 'disputed_at',
  resolvedAt: 'resolved_at',
  releasedAt: 'released_at',
  refundedAt: 'refunded_at',
  canceledAt: 'canceled_at',
  payoutId: 'payout_id',
  payoutStatus: 'payout_status',
  payoutReason: 'payout_reason',
  payoutHeldAt: 'payout_held_at',
  payoutSettledAt: 'payout_settled_at',
  payoutRecipient: 'payout_recipient',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
};

/** The columns of `values` as the escrows table names them (bigints as strings). */
export function toRow(values: Partial<Escrow>): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(values)) {
    if (value === undefined) continue;
    row[COLUMNS[key as keyof Escrow]] = typeof value === 'bigint' ? value.toString() : value;
  }
  return row;
}

export type NewEscrow = Omit<
  Escrow,
  | 'trackingReference'
  | 'deliveryNote'
  | 'disputeReason'
  | 'resolutionOutcome'
  | 'resolutionSellerAmountMinor'
  | 'resolutionNote'
  | 'resolvedByUserId'
  | 'settledToSellerMinor'
  | 'settledToBuyerMinor'
  | 'settledFeeMinor'
  | 'fundingPostingId'
  | 'settlementPostingId'
  | 'fundedAt'
  | 'deliveredAt'
  | 'inspectionEndsAt'
  | 'autoReleaseAt'
  | 'acceptedAt'
  | 'disputedAt'
  | 'resolvedAt'
  | 'releasedAt'
  | 'refundedAt'
  | 'canceledAt'
  // Every column of a held payout.
  | `payout${string}`
>;

/** An escrow and its history (its events, oldest first), read in one statement. */
export interface EscrowWithHistory {
  escrow: Escrow;
  history: HistoryEntry[];
}

function withHistory(row: (Row & { history: unknown }) | undefined): EscrowWithHistory | undefined {
  return row ? { escrow: toEscrow(row), history: historyFromColumn(row.history) } : undefined;
}

/** An escrow locked for a decision: its history, and the holding account its funding credited (null before funding). */
export interface LockedEscrow extends EscrowWithHistory {
  holdingAccountId: string | null;
}

/** The holding account an escrow's funding credited (entries never change: the statement's snapshot is enough). */
export const HOLDING_ACCOUNT = `(SELECT en.account_id FROM entries en JOIN ledger_accounts a ON a.id = en.account_id AND a.kind = 'escrow_holding'
    WHERE en.posting_id = e.funding_posting_id AND en.amount_minor > 0 LIMIT 1) AS holding_account_id`;

export function lockedEscrowOf(row: (Row & { history: unknown; holding_account_id: string | null }) | undefined): LockedEscrow | undefined {
  return row ? { escrow: toEscrow(row), history: historyFromColumn(row.history), holdingAccountId: row.holding_account_id } : undefined;
}

/** Which escrows a list shows (GET /escrows, GET /admin/escrows). */
export interface EscrowListFilter {
  /** Escrows in which this user is buyer or seller (all escrows when absent: administrators). */
  partyUserId?: string;
  role?: 'buyer' | 'seller';
  status?: EscrowStatus;
}

const ESCROWS = new Keyset({ table: 'escrows', alias: 'e', noun: 'an escrow of this list' });

/** Knex queries of the escrows table. */
export class EscrowRepository {
  constructor(private readonly db: Db) {}

  async insert(escrow: NewEscrow): Promise<Escrow> {
    const [row] = await this.db('escrows').insert(toRow(escrow)).returning('*');
    return toEscrow(row as Row);
  }

  async findById(id: string): Promise<Escrow | undefined> {
    const row = await this.db<Row>('escrows').where({ id }).first();
    return row ? toEscrow(row as Row) : undefined;
  }

  /** The escrow and its history (GET /escrows/{escrowId}), one statement. */
  async findWithHistory(id: string): Promise<EscrowWithHistory | undefined> {
    return withHistory(await this.db('escrows as e').select('e.*', historyColumn(this.db, 'escrow', 'e.id')).where('e.id', id).first());
  }

  /**
   * The escrow, locked until the end of the transaction (every state change starts here), with
   * its history and its holding account, in the statement that claims the request's
   * Idempotency-Key first (the one write path: readLocked). The history comes from
   * events_history, whose query takes its own snapshot: after a wait for the lock it sees the
   * events of the action it waited for.
   */
  async lockForDecision(id: string): Promise<LockedEscrow | undefined> {
    const row = await readLocked<Row & { history: unknown; holding_account_id: string | null }>(
      this.db as Knex.Transaction,
      `SELECT e.*, events_history('escrow', e.id) AS history, ${HOLDING_ACCOUNT} FROM "escrows" e WHERE e.id = ? AND ${CLAIMED} FOR UPDATE OF e`,
      [id],
    );
    return lockedEscrowOf(row);
  }

  async statusOf(id: string): Promise<EscrowStatus | undefined> {
    const row = await this.db<Row>('escrows').where({ id }).first('status');
    return row?.status;
  }

  /**
   * Locks the delivered escrow whose release is due first, skipping rows another
   * transaction holds (an accept, a dispute, another instance's job): many instances can
   * run the release job at once and never wait for each other or release one escrow twice.
   */
  async lockNextDueForRelease(now: Date): Promise<LockedEscrow | undefined> {
    const row = await this.db('escrows as e')
      .select('e.*', historyColumn(this.db, 'escrow', 'e.id'), this.db.raw(HOLDING_ACCOUNT))
      .where('e.status', 'delivered')
      .andWhere('e.auto_release_at', '<=', now)
      .orderBy([{ column: 'e.auto_release_at' }, { column: 'e.id' }])
      .forUpdate()
      .skipLocked()
      .first();
    return lockedEscrowOf(row);
  }

  /** After a failed release attempt: try this escrow again at `at`, after the others. */
  async postponeRelease(id: string, at: Date): Promise<void> {
    await this.db('escrows').where({ id, status: 'delivered' }).update({ auto_release_at: at });
  }

  /**
   * One page, newest first (`limit + 1` rows: see toPage). A party's list is "buyer or
   * seller", which a keyset equality scope cannot say, so the cursor is checked here first.
   */
  async page(filter: EscrowListFilter, request: PageRequest): Promise<Escrow[]> {
    if (request.startingAfter !== undefined) await ESCROWS.requireCursorIn(this.scoped({ partyUserId: filter.partyUserId }), request.startingAfter);
    if (filter.partyUserId === undefined || filter.role !== undefined) {
      return ((await ESCROWS.paginate(this.db, this.scoped(filter).select('e.*'), {}, request)) as Row[]).map(toEscrow);
    }
    // "Buyer or seller" as one OR reads and sorts every escrow of the party; two pages, each an
    // index scan (escrows_buyer_listing, escrows_seller_listing), merged, read at most 2 x
    // (limit + 1) rows. A party is never both sides of one escrow, so nothing is counted twice.
    const side = (role: 'buyer' | 'seller') => ESCROWS.paginate(this.db, this.scoped({ ...filter, role }).select('e.*'), {}, request);
    const rows = await this.db
      .select('*')
      .from(this.db.raw('((?) UNION ALL (?)) AS e', [side('buyer'), side('seller')]))
      .orderBy([
        { column: 'e.created_at', order: 'desc' },
        { column: 'e.id', order: 'desc' },
      ])
      .limit(request.limit + 1);
    return (rows as Row[]).map(toEscrow);
  }

  private scoped(filter: EscrowListFilter): Knex.QueryBuilder {
    const query = this.db('escrows as e');
    const party = filter.partyUserId;
    if (party !== undefined) {
      if (filter.role === 'buyer') query.where('e.buyer_user_id', party);
      else if (filter.role === 'seller') query.where('e.seller_user_id', party);
      else query.where((qb) => qb.where('e.buyer_user_id', party).orWhere('e.seller_user_id', party));
    }
    if (filter.status) query.andWhere('e.status', filter.status);
    return query;
  }
}
