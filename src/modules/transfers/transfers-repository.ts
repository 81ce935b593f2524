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

const PARTIES_SQL = `SELECT i.n, s.id AS sender_id, s.status AS sender_status, r.id AS recipient_id, r.status AS recipient_status
  FROM jsonb_to_recordset($1::jsonb) AS i(n integer, user_id uuid, email text, phone text)
  LEFT JOIN users s ON s.id = i.user_id
  LEFT JOIN LATERAL (SELECT u.id, u.status FROM users u WHERE u.email = i.email OR u.phone = i.phone LIMIT 1) r ON true
 ORDER BY i.n`;

/** A sender and a recipient as the parties' read finds them (undefined: no such user). */
export interface PartiesFound {
  sender: { id: string; status: string } | undefined;
  recipient: { id: string; status: string } | undefined;
}

interface PartiesRow {
  n: number;
  sender_id: string | null;
  sender_status: string | null;
  recipient_id: string | null;
  recipient_status: string | null;
}

const TRANSFERS = new Keyset({ table: 'transfers', alias: 't', noun: 'one of your transfers' });

/** Queries of the transfers table, bound to a database handle or a transaction. */
export class TransfersRepository {
  constructor(private readonly db: Db) {}

  /**
   * The parties of a window of transfers in one plain statement (nothing locked: ledger_post
   * checks under its locks what money depends on): for each lookup, its sender and the platform
   * user with its e-mail or phone (`recipientLookup`), in order.
   */
  async parties(lookups: ReadonlyArray<{ userId: string; email: string | null; phone: string | null }>): Promise<PartiesFound[]> {
    const items = lookups.map((lookup, index) => ({ n: index + 1, user_id: lookup.userId, email: lookup.email, phone: lookup.phone }));
    const rows = await queryPrepared<PartiesRow>(this.db, 'transfer_parties', PARTIES_SQL, [JSON.stringify(items)]);
    if (rows.length !== lookups.length) throw new Error(`the parties' read answered ${rows.length} rows for ${lookups.length} requests`);
    return rows.map((row) => ({
      sender: row.sender_id === null ? undefined : { id: row.sender_id, status: row.sender_status as string },
      recipient: row.recipient_id === null ? undefined : { id: row.recipient_id, status: row.recipient_status as string },
    }));
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
