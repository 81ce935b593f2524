import type { Knex } from 'knex';
import { Keyset, type PageRequest } from '../../db/keyset';
import { CLAIMED, readLocked } from '../writes';
import { stateFromColumn, tontineStateColumn, type TontineState } from './tontine-state';
import type { TontineStatus } from './tontine-lifecycle';
import { toTontine, type ContributionStatus, type Cycle, type CycleStatus, type Member, type MemberRole, type Tontine, type TontineListing, type TontineRow } from './tontine-rows';

export type { Contribution, ContributionStatus, Cycle, CycleStatus, Member, MemberRole, Tontine, TontineListing } from './tontine-rows';

type Db = Knex | Knex.Transaction;

/** A new tontine: `forming`, no cycle yet. */
export type NewTontine = Omit<
  Tontine,
  'status' | 'currentCycle' | 'paidInCycle' | 'startedAt' | 'completedAt' | 'canceledAt' | 'drawPerCycle' | 'dissolutionReason' | 'dissolvedByUserId' | 'dissolvedAt'
>;

export interface TontineListFilter extends PageRequest {
  userId: string;
  status?: TontineStatus;
}

/** Tontines are listed through their members: a cursor is checked against the list's own query (`requireCursorIn`), not a column of the table. */
const TONTINES = new Keyset({ table: 'tontines', alias: 't', noun: 'one of your tontines in this list' });

/** The tontine tables (tontines, members, invitations, cycles, contributions). */
export class TontineRepository {
  constructor(private readonly db: Db) {}

  async insert(tontine: NewTontine): Promise<void> {
    await this.db('tontines').insert({
      id: tontine.id,
      name: tontine.name,
      organizer_user_id: tontine.organizerUserId,
      currency: tontine.currency,
      contribution_minor: tontine.contributionMinor.toString(),
      frequency: tontine.frequency,
      max_members: tontine.maxMembers,
      payout_order: tontine.payoutOrder,
      seed_commitment: tontine.seedCommitment,
      draw_seed: tontine.drawSeed,
      pool_account_id: tontine.poolAccountId,
      created_at: tontine.createdAt,
    });
  }

  async find(id: string): Promise<Tontine | undefined> {
    const row = await this.db<TontineRow>('tontines').where({ id }).first();
    return row ? toTontine(row) : undefined;
  }

  /** The tontine, locked until the end of the transaction: every change of a tontine takes this lock first. */
  async lock(id: string): Promise<Tontine | undefined> {
    const row = await this.db<TontineRow>('tontines').where({ id }).forUpdate().first();
    return row ? toTontine(row) : undefined;
  }

  /**
   * The one write path's read (src/modules/writes): one statement claims the request's
   * Idempotency-Key, then locks the tontine and reads its state as `userId` sees it (with a
   * snapshot taken once the lock is held: tontine_state). Undefined when there is no such tontine.
   */
  async lockForDecision(id: string, userId: string): Promise<{ tontine: Tontine; state: TontineState } | undefined> {
    const row = await readLocked<TontineRow & { state: unknown }>(
      this.db as Knex.Transaction,
      `SELECT t.*, ${tontineStateColumn('t')} FROM (SELECT * FROM "tontines" WHERE id = ? AND ${CLAIMED} FOR UPDATE) t`,
      [userId, id],
    );
    if (!row) return undefined;
    const { state, ...tontineRow } = row;
    const tontine = toTontine(tontineRow);
    return { tontine, state: stateFromColumn(state, tontine, userId) };
  }

  async update(
    id: string,
    patch: Partial<
      Pick<Tontine, 'status' | 'currentCycle' | 'startedAt' | 'completedAt' | 'canceledAt' | 'drawPerCycle' | 'dissolutionReason' | 'dissolvedByUserId' | 'dissolvedAt'>
    >,
  ): Promise<void> {
    const row: Partial<TontineRow> = {};
    if (patch.drawPerCycle !== undefined) row.draw_per_cycle = patch.drawPerCycle;
    if (patch.dissolutionReason !== undefined) row.dissolution_reason = patch.dissolutionReason;
    if (patch.dissolvedByUserId !== undefined) row.dissolved_by_user_id = patch.dissolvedByUserId;
    if (patch.dissolvedAt !== undefined) row.dissolved_at = patch.dissolvedAt;
    if (patch.status !== undefined) row.status = patch.status;
    if (patch.currentCycle !== undefined) row.current_cycle = patch.currentCycle;
    if (patch.startedAt !== undefined) row.started_at = patch.startedAt;
    if (patch.completedAt !== undefined) row.completed_at = patch.completedAt;
    if (patch.canceledAt !== undefined) row.canceled_at = patch.canceledAt;
    await this.db('tontines').where({ id }).update(row);
  }

  /** The tontines `userId` is a member of, newest first: one keyset page (`limit + 1` rows at most, see toPage); 400 for a cursor outside this list. */
  async listForUser(filter: TontineListFilter): Promise<TontineListing[]> {
    const listed = this.db('tontines as t').join('tontine_members as m', 'm.tontine_id', 't.id').where('m.user_id', filter.userId);
    if (filter.status) listed.andWhere('t.status', filter.status);
    if (filter.startingAfter !== undefined) await TONTINES.requireCursorIn(listed, filter.startingAfter);
    const query = listed.select(
      't.*',
      'm.role',
      this.db.raw('(SELECT count(*)::int FROM tontine_members a WHERE a.tontine_id = t.id) AS member_count'),
      this.db.raw(`(SELECT c.due_at FROM tontine_cycles c WHERE c.tontine_id = t.id AND c.number = t.current_cycle AND t.status = 'active') AS current_due_at`),
    );
    const rows = (await TONTINES.paginate(this.db, query, {}, filter)) as Array<TontineRow & { role: MemberRole; member_count: number; current_due_at: Date | null }>;
    return rows.map((row) => ({ ...toTontine(row), role: row.role, memberCount: row.member_count, currentDueAt: row.current_due_at }));
  }

  // Members and invitations

  async members(tontineId: string): Promise<Member[]> {
    const rows = (await this.db('tontine_members').where({ tontine_id: tontineId }).orderBy('join_number')) as Array<{
      user_id: string;
      role: MemberRole;
      join_number: number;
      payout_position: number | null;
      joined_at: Date;
    }>;
    return rows.map((row) => ({ userId: row.user_id, role: row.role, joinNumber: row.join_number, payoutPosition: row.payout_position, joinedAt: row.joined_at }));
  }

  /** Adds a member with the next join number (the caller holds the tontine's lock). */
  async addMember(tontineId: string, userId: string, role: MemberRole, joinedAt: Date): Promise<void> {
    await this.db('tontine_members').insert({
      tontine_id: tontineId,
      user_id: userId,
      role,
      join_number: this.db.raw('(SELECT coalesce(max(join_number), 0) + 1 FROM tontine_members WHERE tontine_id = ?)', [tontineId]),
      joined_at: joinedAt,
    });
  }

  async removeMember(tontineId: string, userId: string): Promise<void> {
    await this.db('tontine_members').where({ tontine_id: tontineId, user_id: userId }).del();
  }

  /** Each member's payout position: their place in `userIdsInOrder` (one statement). */
  async setPayoutPositions(tontineId: string, userIdsInOrder: readonly string[]): Promise<void> {
    await this.db.raw(
      `UPDATE tontine_members m SET payout_position = p.position
         FROM unnest(:userIds::uuid[]) WITH ORDINALITY AS p(user_id, position)
        WHERE m.tontine_id = :tontineId AND m.user_id = p.user_id`,
      { tontineId, userIds: [...userIdsInOrder] },
    );
  }

  /** Opens (or reopens) the invitation of `userId`; returns false when one was already open. */
  async openInvitation(tontineId: string, userId: string, invitedBy: string, at: Date): Promise<boolean> {
    const rows = await this.db('tontine_invitations')
      .insert({ tontine_id: tontineId, user_id: userId, invited_by_user_id: invitedBy, status: 'open', invited_at: at })
      .onConflict(['tontine_id', 'user_id'])
      .merge({ invited_by_user_id: invitedBy, status: 'open', invited_at: at })
      .whereNot('tontine_invitations.status', 'open')
      .returning('user_id');
    return rows.length > 0;
  }

  async acceptInvitation(tontineId: string, userId: string): Promise<void> {
    await this.db('tontine_invitations').where({ tontine_id: tontineId, user_id: userId, status: 'open' }).update({ status: 'accepted' });
  }

  async lapseOpenInvitations(tontineId: string): Promise<void> {
    await this.db('tontine_invitations').where({ tontine_id: tontineId, status: 'open' }).update({ status: 'lapsed' });
  }

  // Cycles and contributions

  async insertCycles(tontineId: string, cycles: ReadonlyArray<{ number: number; beneficiaryUserId: string | null; dueAt: Date }>): Promise<void> {
    await this.db('tontine_cycles').insert(
      cycles.map((cycle) => ({ tontine_id: tontineId, number: cycle.number, beneficiary_user_id: cycle.beneficiaryUserId, due_at: cycle.dueAt })),
    );
  }

  async cycles(tontineId: string): Promise<Cycle[]> {
    const rows = (await this.db('tontine_cycles').where({ tontine_id: tontineId }).orderBy('number')) as Array<{
      number: number;
      beneficiary_user_id: string | null;
      due_at: Date;
      status: CycleStatus;
      payout_posting_id: string | null;
      paid_out_at: Date | null;
    }>;
    return rows.map((row) => ({
      number: row.number,
      beneficiaryUserId: row.beneficiary_user_id,
      dueAt: row.due_at,
      status: row.status,
      payoutPostingId: row.payout_posting_id,
      paidOutAt: row.paid_out_at,
    }));
  }

  /** Opens cycle `number`: every member's contribution starts `pending`. */
  async openCycle(tontineId: string, number: number, memberIds: readonly string[]): Promise<void> {
    await this.db('tontine_cycles').where({ tontine_id: tontineId, number }).update({ status: 'open' });
    await this.db('tontine_contributions').insert(memberIds.map((userId) => ({ tontine_id: tontineId, cycle_number: number, user_id: userId })));
  }

  async cancelRemainingCycles(tontineId: string): Promise<void> {
    await this.db('tontine_cycles').where({ tontine_id: tontineId }).whereIn('status', ['open', 'upcoming']).update({ status: 'canceled' });
  }

  async contributionStatus(id: string): Promise<ContributionStatus | undefined> {
    const row = (await this.db('tontine_contributions').where({ id }).first('status')) as { status: ContributionStatus } | undefined;
    return row?.status;
  }

  async markRefunded(id: string, postingId: string, at: Date): Promise<void> {
    await this.db('tontine_contributions').where({ id, status: 'paid' }).update({ status: 'refunded', refund_posting_id: postingId, refunded_at: at });
  }

  /** How many contributions each member paid and kept paid (refunded ones excluded), over every cycle, by user id. */
  async paidCountsByMember(tontineId: string): Promise<Map<string, number>> {
    const rows = (await this.db('tontine_contributions')
      .where({ tontine_id: tontineId, status: 'paid' })
      .groupBy('user_id')
      .select('user_id', this.db.raw('count(*)::int AS paid'))) as Array<{ user_id: string; paid: number }>;
    return new Map(rows.map((row) => [row.user_id, Number(row.paid)]));
  }

  // Late marking (background job, many instances)

  /**
   * Active tontines whose running cycle is due at `now` and still has pending contributions,
   * locked: SKIP LOCKED lets several job instances (and contributions in flight) pass each
   * other instead of waiting; a skipped tontine is taken by the next run.
   */
  async lockDueForLateMarking(now: Date, limit: number): Promise<Array<{ id: string; currentCycle: number }>> {
    const rows = (await this.db('tontines as t')
      .join('tontine_cycles as c', function currentCycle() {
        this.on('c.tontine_id', '=', 't.id').andOn('c.number', '=', 't.current_cycle');
      })
      .where('t.status', 'active')
      .andWhere('c.due_at', '<=', now)
      .whereExists(function pending() {
        this.select(1).from('tontine_contributions as k').whereRaw('k.tontine_id = t.id AND k.cycle_number = t.current_cycle').andWhere('k.status', 'pending');
      })
      .orderBy('c.due_at')
      .limit(limit)
      .forUpdate('t')
      .skipLocked()
      .select('t.id', 't.current_cycle')) as Array<{ id: string; current_cycle: number }>;
    return rows.map((row) => ({ id: row.id, currentCycle: row.current_cycle }));
  }

  /** Marks the cycle's pending contributions late; returns the members concerned. */
  async markLate(tontineId: string, cycleNumber: number, at: Date): Promise<string[]> {
    const rows = (await this.db('tontine_contributions')
      .where({ tontine_id: tontineId, cycle_number: cycleNumber, status: 'pending' })
      .update({ status: 'late', late_at: at })
      .returning('user_id')) as Array<{ user_id: string }>;
    return rows.map((row) => row.user_id);
  }
}
