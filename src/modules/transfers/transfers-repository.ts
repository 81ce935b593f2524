import type { Knex } from 'knex';
import { Keyset, type PageRequest } from '../../db/keyset';
import { queryPrepared } from '../../db/prepared';
import { toBigInt } from '../ledger';

type Db = Knex | Knex.Transaction;

export type TransferRail = 'p2p' | 'bank' | 'mobile_money';
export type TransferStatus = 'pending' | 'completed' | 'failed' | 'reversed';
export type RecipientType = 'user' | 'iban' | 'msisdn';

export interface Transfer {
  id: string;
  senderUserId: string;
  rail: TransferRail;
  status: TransferStatus;
  currency: string;
  amountMinor: bigint;
  recipientType: RecipientType;
  recipientIdentifier: string;
  recipientUserId: string | null;
  note: string | null;
  postingId: string;
  settlementPostingId: string | null;
  railReference: string | null;
  submittedAt: Date | null;
  failureCode: string | null;
  failureReason: string | null;
  createdAt: Date;
  updatedAt: Date;
  settledAt: Date | null;
}

interface Row {
  id: string;
  sender_user_id: string;
  rail: TransferRail;
  status: TransferStatus;
  currency: string;
  amount_minor: string;
  recipient_type: RecipientType;
  recipient_identifier: string;
  recipient_user_id: string | null;
  note: string | null;
  posting_id: string;
  settlement_posting_id: string | null;
  rail_reference: string | null;
  submitted_at: Date | null;
  failure_code: string | null;
  failure_reason: string | null;
  created_at: Date;
  updated_at: Date;
  settled_at: Date | null;
  /** Set while an instance hands the transfer to its rail, or awaits the rail's outcome. */
  rail_lease_until: Date | null;
}

function toTransfer(row: Row): Transfer {
  return {
    id: row.id,
    senderUserId: row.sender_user_id,
    rail: row.rail,
    status: row.status,
    currency: row.currency,
    amountMinor: toBigInt(row.amount_minor),
    recipientType: row.recipient_type,
    recipientIdentifier: row.recipient_identifier,
    recipientUserId: row.recipient_user_id,
    note: row.note,
    postingId: row.posting_id,
    settlementPostingId: row.settlement_posting_id,
    railReference: row.rail_reference,
    submittedAt: row.submitted_at,
    failureCode: row.failure_code,
    failureReason: row.failure_reason,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    settledAt: row.settled_at,
  };
}

/** What `transfer_create` needs: the caller, the key, and the request as parsed in Node. */
export interface TransferRequest {
  /** When given, the session must still be live and its user active (else SQLSTATE TRF01/TRF02). */
  sessionId: string | null;
  userId: string;
  operation: string;
  key: string;
  requestHash: string;
  leaseSeconds: number;
  ttlHours: number;
  currency: string;
  amountMinor: bigint;
  note: string | null;
  identifier: { kind: 'email' | 'phone' | 'iban'; value: string };
  rail: TransferRail | null;
  /** Whether the identifier is a valid telephone number for its country (a phone without a rail may go to mobile money). */
  phoneValid: boolean;
  /**
   * Names this request across its runs (a batch that failed as a whole runs its items again):
   * a run that finds the key completed by this same attempt answers with its transfer.
   */
  attempt: string;
}

const TRANSFER_CREATE_BATCH_SQL = 'SELECT b.item, b.code, b.detail, (b.transfer).* FROM transfer_create_batch($1::jsonb) AS b ORDER BY b.item';

/** One item's answer: the transfer made, or its refusal (SQLSTATE TRF01...TRF14 and its JSON DETAIL). */
export type TransferOutcome = { transfer: Transfer } | { code: string; detail: string | null };

const TRANSFERS = new Keyset({ table: 'transfers', alias: 't', noun: 'one of your transfers' });

/** Queries of the transfers table, bound to a database handle or a transaction. */
export class TransfersRepository {
  constructor(private readonly db: Db) {}

  /**
   * POST /transfers for a group of requests in one prepared statement (`transfer_create_batch`,
   * one transaction): for each, the session, the idempotency key, the recipient, the wallets,
   * the posting, the transfer row and the completed key (`transfer_create`). One outcome per
   * request, in order; an error that is no request's own refusal fails the whole call.
   */
  async createBatch(requests: readonly TransferRequest[]): Promise<TransferOutcome[]> {
    const items = requests.map((request) => ({
      session_id: request.sessionId,
      user_id: request.userId,
      operation: request.operation,
      key: request.key,
      request_hash: request.requestHash,
      lease_seconds: request.leaseSeconds,
      ttl_hours: request.ttlHours,
      currency: request.currency,
      amount: request.amountMinor.toString(),
      note: request.note,
      identifier_kind: request.identifier.kind,
      identifier: request.identifier.value,
      rail: request.rail,
      phone_valid: request.phoneValid,
      attempt: request.attempt,
    }));
    const rows = await queryPrepared<Row & { item: number; code: string | null; detail: string | null }>(this.db, 'transfer_create_batch', TRANSFER_CREATE_BATCH_SQL, [
      JSON.stringify(items),
    ]);
    if (rows.length !== requests.length) throw new Error(`transfer_create_batch answered ${rows.length} rows for ${requests.length} requests`);
    return rows.map((row) => (row.code === null ? { transfer: toTransfer(row) } : { code: row.code, detail: row.detail }));
  }

  async findById(id: string): Promise<Transfer | undefined> {
    const row = await this.db<Row>('transfers').where({ id }).first();
    return row ? toTransfer(row) : undefined;
  }

  async lockById(id: string): Promise<Transfer | undefined> {
    const row = await this.db<Row>('transfers').where({ id }).forUpdate().first();
    return row ? toTransfer(row) : undefined;
  }

  async findOwn(senderUserId: string, id: string): Promise<Transfer | undefined> {
    const row = await this.db<Row>('transfers').where({ id, sender_user_id: senderUserId }).first();
    return row ? toTransfer(row) : undefined;
  }

  async statusOf(id: string): Promise<TransferStatus | undefined> {
    const row = await this.db<Row>('transfers').where({ id }).first('status');
    return row?.status;
  }

  /** One page of the sender's transfers, newest first (`limit + 1` rows: see toPage); 400 for a cursor that is not theirs. */
  async page(senderUserId: string, request: PageRequest): Promise<Transfer[]> {
    const query = this.db('transfers as t').where('t.sender_user_id', senderUserId).select('t.*');
    const rows = await TRANSFERS.rows<Row>(this.db, query, { sender_user_id: senderUserId }, request);
    return rows.map(toTransfer);
  }

  /** The rail accepted the transfer: its lease now runs while the outcome is awaited (`awaitOutcomeSeconds`). */
  async markSubmitted(id: string, railReference: string, awaitOutcomeSeconds: number): Promise<void> {
    await this.db<Row>('transfers')
      .where({ id, status: 'pending' })
      .update({
        rail_reference: railReference,
        submitted_at: this.db.raw('coalesce(submitted_at, now())'),
        rail_lease_until: this.db.raw('now() + make_interval(secs => ?)', [awaitOutcomeSeconds]),
        updated_at: this.db.fn.now(),
      });
  }

  async markSettled(
    id: string,
    settlement: { status: 'completed' | 'failed'; postingId: string; railReference: string; failureCode?: string; failureReason?: string },
  ): Promise<Transfer> {
    const [row] = await this.db<Row>('transfers')
      .where({ id, status: 'pending' })
      .update({
        status: settlement.status,
        settlement_posting_id: settlement.postingId,
        rail_reference: settlement.railReference,
        failure_code: settlement.failureCode ?? null,
        failure_reason: settlement.failureReason ?? null,
        settled_at: this.db.fn.now(),
        updated_at: this.db.fn.now(),
      })
      .returning('*');
    return toTransfer(row as Row);
  }

  /**
   * Claims up to `limit` pending rail transfers nobody is handing over (no lease, or an
   * expired one), oldest first, for `leaseSeconds`: rows another instance is claiming are
   * skipped (FOR UPDATE SKIP LOCKED) and rows it claimed carry its lease, so instances
   * sweeping at once each get different transfers. Returns the transfers claimed.
   */
  async claimForHandOver(limit: number, leaseSeconds: number): Promise<Transfer[]> {
    const result = await this.db.raw(
      // MATERIALIZED: as a sub-select under UPDATE the claim may run again for each row scanned
      // and then lease far more than `limit` rows (seen: LIMIT 1 leased all 60 pending ones).
      `WITH claimed AS MATERIALIZED (
         SELECT c.id FROM transfers c
          WHERE c.status = 'pending' AND c.rail <> 'p2p' AND (c.rail_lease_until IS NULL OR c.rail_lease_until <= now())
          ORDER BY c.created_at
          LIMIT ?
          FOR UPDATE SKIP LOCKED)
       UPDATE transfers t SET rail_lease_until = now() + make_interval(secs => ?)
         FROM claimed
        WHERE t.id = claimed.id AND t.status = 'pending'
       RETURNING t.*`,
      [limit, leaseSeconds],
    );
    return (result.rows as Row[]).map(toTransfer).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
  }

  /** Claims one pending rail transfer for `leaseSeconds` unless someone holds its lease (see claimForHandOver). */
  async claimOneForHandOver(id: string, leaseSeconds: number): Promise<Transfer | undefined> {
    const [row] = (await this.db<Row>('transfers')
      .where({ id, status: 'pending' })
      .whereNot('rail', 'p2p')
      .andWhere((q) => q.whereNull('rail_lease_until').orWhere('rail_lease_until', '<=', this.db.fn.now()))
      .update({ rail_lease_until: this.db.raw('now() + make_interval(secs => ?)', [leaseSeconds]) })
      .returning('*')) as Row[];
    return row ? toTransfer(row) : undefined;
  }

  /** Gives up hand-over leases (this instance stops and forgets what it handed over): the next sweep takes the transfers. */
  async releaseHandOver(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db<Row>('transfers').whereIn('id', [...ids]).andWhere({ status: 'pending' }).update({ rail_lease_until: null });
  }
}
