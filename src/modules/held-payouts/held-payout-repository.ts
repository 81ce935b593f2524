import type { Knex } from 'knex';
import { Keyset, type PageRequest } from '../../db/keyset';
import { toBigInt } from '../ledger';
import type { HeldPayout, HeldPayoutStatus, HeldPayoutSubject } from './held-payout';

type Db = Knex | Knex.Transaction;

interface Row {
  id: string;
  subject_type: HeldPayoutSubject;
  subject_id: string;
  cycle_number: number | null;
  recipient_user_id: string;
  currency: string;
  amount_minor: string;
  reason: 'recipient_limit';
  status: HeldPayoutStatus;
  posting_id: string | null;
  returned_by_user_id: string | null;
  return_reason: string | null;
  held_at: Date;
  settled_at: Date | null;
  next_attempt_at: Date;
  attempts: number;
}

function toHeldPayout(row: Row): HeldPayout {
  return {
    id: row.id,
    subjectType: row.subject_type,
    subjectId: row.subject_id,
    cycleNumber: row.cycle_number === null ? null : Number(row.cycle_number),
    recipientUserId: row.recipient_user_id,
    currency: row.currency.trim(),
    amountMinor: toBigInt(row.amount_minor),
    reason: row.reason,
    status: row.status,
    postingId: row.posting_id,
    returnedByUserId: row.returned_by_user_id,
    returnReason: row.return_reason,
    heldAt: row.held_at,
    settledAt: row.settled_at,
    nextAttemptAt: row.next_attempt_at,
    attempts: Number(row.attempts),
  };
}

/** The list of GET /admin/held-payouts: the most recently held first (index held_payouts_listing). */
const HELD_PAYOUTS = new Keyset({ table: 'held_payouts', alias: 'h', orderBy: ['held_at', 'id'], noun: 'a held payout of this list' });

/**
 * Knex queries of held_payouts. Its rows change through write_apply only (a decision on the
 * escrow or the tontine, under its lock), but for the job's note of a failed attempt.
 */
export class HeldPayoutRepository {
  constructor(private readonly db: Db) {}

  async find(id: string): Promise<HeldPayout | undefined> {
    const row = (await this.db('held_payouts').where({ id }).first()) as Row | undefined;
    return row ? toHeldPayout(row) : undefined;
  }

  /** One page, the most recently held first (`limit + 1` rows: see toPage), of those in `status` when given. */
  async page(filter: { status?: HeldPayoutStatus }, request: PageRequest): Promise<HeldPayout[]> {
    const scope: Record<string, string> = filter.status === undefined ? {} : { status: filter.status };
    const query = this.db('held_payouts as h').select('h.*');
    if (filter.status !== undefined) query.where('h.status', filter.status);
    return (await HELD_PAYOUTS.rows<Row>(this.db, query, scope, request)).map(toHeldPayout);
  }

  /** The held payouts whose next attempt is due at `now`, the longest waiting first. */
  async due(now: Date, limit: number): Promise<HeldPayout[]> {
    const rows = (await this.db('held_payouts')
      .where({ status: 'held_for_verification' })
      .andWhere('next_attempt_at', '<=', now)
      .orderBy([{ column: 'next_attempt_at' }, { column: 'id' }])
      .limit(limit)) as Row[];
    return rows.map(toHeldPayout);
  }

  /** After an attempt that failed otherwise than by the recipient's limits (a frozen wallet): try again at `at`. */
  async postpone(held: HeldPayout, at: Date): Promise<void> {
    await this.db('held_payouts').where({ id: held.id, status: 'held_for_verification' }).update({ attempts: held.attempts + 1, next_attempt_at: at });
  }
}
