import type { Knex } from 'knex';
import { prepared } from '../../db/prepared';
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

/** What a new transfer row is given; the rest is set by settlement. */
export type NewTransfer = Pick<
  Transfer,
  'id' | 'senderUserId' | 'rail' | 'status' | 'currency' | 'amountMinor' | 'recipientType' | 'recipientIdentifier' | 'recipientUserId' | 'note' | 'postingId'
>;

export interface UserSummary {
  id: string;
  email: string | null;
  phone: string | null;
  status: 'active' | 'locked' | 'disabled';
}

export const transfersRepository = {
  async insert(trx: Knex.Transaction, transfer: NewTransfer): Promise<Transfer> {
    const [row] = await prepared(
      'transfer_insert',
      trx<Row>('transfers')
        .insert({
        id: transfer.id,
        sender_user_id: transfer.senderUserId,
        rail: transfer.rail,
        status: transfer.status,
        currency: transfer.currency,
        amount_minor: transfer.amountMinor.toString(),
        recipient_type: transfer.recipientType,
        recipient_identifier: transfer.recipientIdentifier,
        recipient_user_id: transfer.recipientUserId,
        note: transfer.note,
        posting_id: transfer.postingId,
        })
        .returning('*'),
    );
    return toTransfer(row as Row);
  },

  async findById(db: Db, id: string): Promise<Transfer | undefined> {
    const row = await db<Row>('transfers').where({ id }).first();
    return row ? toTransfer(row) : undefined;
  },

  async lockById(trx: Knex.Transaction, id: string): Promise<Transfer | undefined> {
    const row = await trx<Row>('transfers').where({ id }).forUpdate().first();
    return row ? toTransfer(row) : undefined;
  },

  async findOwn(db: Db, senderUserId: string, id: string): Promise<Transfer | undefined> {
    const row = await db<Row>('transfers').where({ id, sender_user_id: senderUserId }).first();
    return row ? toTransfer(row) : undefined;
  },

  async statusOf(db: Db, id: string): Promise<TransferStatus | undefined> {
    const row = await db<Row>('transfers').where({ id }).first('status');
    return row?.status;
  },

  /** Newest first; `startingAfter` must be one of the sender's transfers (checked by the caller). */
  async listBySender(db: Db, senderUserId: string, limit: number, startingAfter?: string): Promise<Transfer[]> {
    const query = db<Row>('transfers').where({ sender_user_id: senderUserId });
    if (startingAfter) {
      // Compared in SQL: created_at has microseconds that a JS Date would lose.
      query.andWhereRaw('(created_at, id) < (SELECT t.created_at, t.id FROM transfers t WHERE t.id = ?)', [startingAfter]);
    }
    const rows = await query.orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(limit);
    return rows.map(toTransfer);
  },

  async markSubmitted(db: Db, id: string, railReference: string): Promise<void> {
    await db('transfers')
      .where({ id, status: 'pending' })
      .update({ rail_reference: railReference, submitted_at: db.raw('coalesce(submitted_at, now())'), updated_at: db.fn.now() });
  },

  async markSettled(
    trx: Knex.Transaction,
    id: string,
    settlement: { status: 'completed' | 'failed'; postingId: string; railReference: string; failureCode?: string; failureReason?: string },
  ): Promise<Transfer> {
    const [row] = await trx<Row>('transfers')
      .where({ id, status: 'pending' })
      .update({
        status: settlement.status,
        settlement_posting_id: settlement.postingId,
        rail_reference: settlement.railReference,
        failure_code: settlement.failureCode ?? null,
        failure_reason: settlement.failureReason ?? null,
        settled_at: trx.fn.now(),
        updated_at: trx.fn.now(),
      } as never)
      .returning('*');
    return toTransfer(row as Row);
  },

  async pendingIds(db: Db, limit: number): Promise<string[]> {
    const rows = await db<Row>('transfers').where({ status: 'pending' }).orderBy('created_at').limit(limit).select('id');
    return rows.map((row) => row.id);
  },

  /** The sender and, when looked up by e-mail or phone, the recipient: one query. */
  async findParties(db: Db, senderId: string, recipient: { email: string } | { phone: string } | null): Promise<{ sender?: UserSummary; recipient?: UserSummary }> {
    const column = recipient === null ? null : 'email' in recipient ? 'email' : 'phone';
    const value = recipient === null ? null : 'email' in recipient ? recipient.email : recipient.phone;
    const { rows } = (await prepared(
      `transfer_parties_by_${column ?? 'sender'}`,
      db.raw(
        `SELECT id, email, phone, status, id = ?::uuid AS is_sender FROM users WHERE id = ?::uuid${column ? ` OR ${column} = ?` : ''}`,
        column ? [senderId, senderId, value] : [senderId, senderId],
      ),
    )) as { rows: Array<UserSummary & { is_sender: boolean }> };
    const strip = ({ is_sender: _ignored, ...user }: UserSummary & { is_sender: boolean }): UserSummary => user;
    const sender = rows.find((row) => row.is_sender);
    const match = rows.find((row) => (column === 'email' ? row.email === value : column === 'phone' ? row.phone === value : false));
    return { sender: sender && strip(sender), recipient: match && strip(match) };
  },
};
