import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { ForbiddenError, ValidationError } from '../../errors';
import { toPage } from '../../db/keyset';
import { withTransaction } from '../../db/transaction';
import type { Caller, WindowKey } from '../../contract';
import { parsePartyIdentifier, UserRepository } from '../auth';
import { EventRepository, type NewEvent } from '../events';
import { PendingKey, type ResourceStatusReader } from '../idempotency';
import { currencies, ensureAccount, parseAmount } from '../ledger';
import { DecisionWindow } from '../writes';
import { newDrawSeed, seedCommitment } from './tontine-draw';
import { AlreadyMemberError, InviteeNotFoundError, TontineNotFoundError } from './tontine-errors';
import {
  assertAllowed,
  cycleDueAt,
  statusAfter,
  type PayoutOrder,
  type TontineAction,
  type TontineFrequency,
  type TontineStatus,
} from './tontine-lifecycle';
import { summaryView, type TontinePage, type TontineView } from './tontine-presenter';
import { TontineRepository } from './tontine-repository';
import { completeHeldPot, returnHeldPot } from './tontine-held-payouts';
import type { HeldPayout } from '../held-payouts';
import { endTontine } from './tontine-ending';
import type { TontineScope } from './tontine-scope';
import { outsiderSituationFrom, situationFrom } from './tontine-situation';
import { describeState, readTontineState } from './tontine-state';
import { readConnection } from '../../db/read-routing';
import { tontineSnapshot } from './tontine-snapshot';
import { contributeLocked, tontineDecider, type ContributionSubmission, type Contributed } from './tontine-window';

/** The status a contribution's Idempotency-Key reports on a replay, read now (src/services.ts wires it). */
export const contributionStatusOf: ResourceStatusReader = (db, id) => new TontineRepository(db).contributionStatus(id);

export interface CreateTontineInput {
  name: string;
  currency: string;
  contribution_amount: number | string;
  frequency: TontineFrequency;
  max_members: number;
  payout_order: PayoutOrder;
}

export interface TontineServiceDeps {
  knex: Knex;
  /** The clock (tests inject one): creation, start, schedule, payments and late marking read it. */
  now?: () => Date;
  logger?: Pick<Logger, 'warn'>;
  /** Group commit of the contributions: the window (ms, <= 2) and the largest batch (<= 64). */
  batch?: { windowMs?: number; maxItems?: number };
}


/**
 * Tontines: rotating savings groups on the ledger. Every change locks the tontine's row first
 * (then the ledger locks its accounts), records its event in the same transaction, and money
 * moves only through ledger postings:
 * - a contribution: member wallet -> the tontine's pool (kind `tontine.contribution`);
 * - the payout, in the transaction of the cycle's last contribution: pool -> beneficiary
 *   (`tontine.payout`, one per cycle: the (kind, reference) of a posting is unique);
 * - a cancellation while active: pool -> each payer of the open cycle (`tontine.refund`).
 * So the pool always holds exactly the open cycle's paid contributions.
 */
export class TontineService {
  private readonly knex: Knex;
  private readonly now: () => Date;
  /** The group commit of contributions (its batch sizes: benchmarks). */
  readonly window: DecisionWindow<ContributionSubmission, Contributed>;

  constructor(private readonly deps: TontineServiceDeps) {
    this.knex = deps.knex;
    this.now = deps.now ?? (() => new Date());
    const rules = {
      alone: (trx: Knex.Transaction, { caller, tontineId, body }: ContributionSubmission) => contributeLocked(trx, caller.userId, tontineId, body, this.now()),
      current: ({ caller, tontineId }: ContributionSubmission) => this.get(caller, tontineId),
    };
    this.window = new DecisionWindow(this.knex, tontineDecider(this.knex, rules), () => this.now(), deps.logger, deps.batch);
  }

  /** POST /tontines, in `db`'s transaction (the pipeline's, which an Idempotency-Key completes in). */
  async create(db: Knex | Knex.Transaction, caller: Pick<Caller, 'userId'>, input: CreateTontineInput): Promise<TontineView> {
    const { userId } = caller;
    const currency = await currencies.require(db, input.currency, 'body.currency');
    const contributionMinor = parseAmount(input.contribution_amount, currency.exponent, { field: 'body.contribution_amount' });
    const id = crypto.randomUUID();
    const seed = newDrawSeed();
    const at = this.now();
    return withTransaction(db, async (trx) => {
      const repo = new TontineRepository(trx);
      const pool = await ensureAccount(trx, { ownerType: 'platform', ownerId: null, currency: currency.code, kind: 'tontine_pool', externalRef: id });
      await repo.insert({
        id,
        name: input.name,
        organizerUserId: userId,
        currency: currency.code,
        contributionMinor,
        frequency: input.frequency,
        maxMembers: input.max_members,
        payoutOrder: input.payout_order,
        seedCommitment: seedCommitment(seed),
        drawSeed: seed,
        poolAccountId: pool.id,
        createdAt: at,
      });
      await repo.addMember(id, userId, 'organizer', at);
      const { view, object } = await this.describe(trx, id, userId);
      await new EventRepository(trx).record({
        subjectType: 'tontine',
        subjectId: id,
        type: 'tontine.created',
        actorUserId: userId,
        payload: { name: input.name, currency: currency.code, contribution_minor: contributionMinor.toString(), frequency: input.frequency, max_members: input.max_members, payout_order: input.payout_order, seed_commitment: seedCommitment(seed) },
        occurredAt: at,
        object,
      });
      return view;
    });
  }

  /** GET /tontines/{id}: members and invited users only (others: 404). */
  async get(caller: Pick<Caller, 'userId'>, id: string): Promise<TontineView> {
    return withTransaction(this.knex, async (trx) => (await this.describe(trx, id, caller.userId)).view, { isolationLevel: 'repeatable read', readOnly: true });
  }

  async list(caller: Pick<Caller, 'userId'>, options: { limit: number; startingAfter?: string; status?: TontineStatus }): Promise<TontinePage> {
    const db = readConnection(this.knex);
    const listed = await new TontineRepository(db).listForUser({ userId: caller.userId, status: options.status, limit: options.limit, startingAfter: options.startingAfter });
    const rows = await currencies.withExponents(db, listed);
    const views = rows.map((row) => summaryView(row, { role: row.role, memberCount: row.memberCount, currentDueAt: row.currentDueAt, exponent: row.exponent }));
    return toPage(views, options.limit);
  }

  async invite(db: Knex | Knex.Transaction, caller: Pick<Caller, 'userId'>, id: string, identifier: string): Promise<TontineView> {
    const invited = parsePartyIdentifier(identifier, { path: 'body.identifier', name: 'identifier' });
    return this.act(db, caller.userId, id, 'invite', async ({ trx, repo, events, tontine, state }, at) => {
      const invitee = await new UserRepository(trx).findReachable(invited);
      if (!invitee) throw new InviteeNotFoundError();
      if (state.members.some((member) => member.userId === invitee.id)) throw new AlreadyMemberError();
      if (await repo.openInvitation(id, invitee.id, caller.userId, at)) {
        await events.record({ subjectType: 'tontine', subjectId: tontine.id, type: 'tontine.member_invited', actorUserId: caller.userId, payload: { user_id: invitee.id }, occurredAt: at });
      }
    });
  }

  async join(db: Knex | Knex.Transaction, caller: Pick<Caller, 'userId'>, id: string): Promise<TontineView> {
    const { userId } = caller;
    return this.act(db, userId, id, 'join', async ({ repo, events }, at) => {
      await repo.addMember(id, userId, 'member', at);
      await repo.acceptInvitation(id, userId);
      await events.record({ subjectType: 'tontine', subjectId: id, type: 'tontine.member_joined', actorUserId: userId, payload: { user_id: userId }, occurredAt: at });
    });
  }

  async leave(db: Knex | Knex.Transaction, caller: Pick<Caller, 'userId'>, id: string): Promise<TontineView> {
    const { userId } = caller;
    return this.act(
      db,
      userId,
      id,
      'leave',
      async ({ repo, events }, at) => {
        await repo.removeMember(id, userId);
        await events.record({ subjectType: 'tontine', subjectId: id, type: 'tontine.member_left', actorUserId: userId, payload: { user_id: userId }, occurredAt: at });
      },
      'former_member',
    );
  }

  /**
   * Fixes the schedule and opens cycle 1: `active`. A join-order tontine fixes the whole payout
   * order now; a random one draws each cycle's beneficiary only when that cycle's pot is
   * complete (see tontine-draw.ts), so nobody learns the order while the tontine can still be
   * canceled.
   */
  async start(db: Knex | Knex.Transaction, caller: Pick<Caller, 'userId'>, id: string): Promise<TontineView> {
    return this.act(db, caller.userId, id, 'start', async ({ repo, events, tontine, situation, state }, at) => {
      const joinOrder = state.members.map((member) => member.userId);
      const random = tontine.payoutOrder === 'random';
      if (!random) await repo.setPayoutPositions(id, joinOrder);
      await repo.insertCycles(
        id,
        joinOrder.map((userId, index) => ({ number: index + 1, beneficiaryUserId: random ? null : userId, dueAt: cycleDueAt(at, tontine.frequency, index + 1) })),
      );
      await repo.openCycle(id, 1, joinOrder);
      await repo.lapseOpenInvitations(id);
      await repo.update(id, { status: statusAfter(situation, 'start'), currentCycle: 1, startedAt: at, drawPerCycle: random });
      await events.record({
        subjectType: 'tontine',
        subjectId: id,
        type: 'tontine.started',
        actorUserId: caller.userId,
        payload: { payout_order: tontine.payoutOrder, ...(random ? { draw: 'per_cycle', members: joinOrder } : { order: joinOrder }) },
        occurredAt: at,
      });
    });
  }

  /**
   * POST /tontines/{id}/contributions: pays the caller's contribution to the running cycle, a
   * window at a time (tontine-window.ts): `key` is the Idempotency-Key the pipeline hands over,
   * claimed and completed by the window's statement. Returns the tontine after it and the
   * contribution paid.
   */
  async contributeInWindow(key: WindowKey, caller: Pick<Caller, 'userId'>, id: string, body: { cycle: number }): Promise<Contributed> {
    if (!(key instanceof PendingKey)) throw new TypeError('a contribution in a window needs the Idempotency-Key the pipeline hands over');
    const outcome = await this.window.submit({ caller, tontineId: id, body, key });
    if ('error' in outcome) throw outcome.error;
    return outcome.after;
  }

  /**
   * A contribution alone, on the one write path, in `db`'s transaction (the pipeline's, which
   * hands the request's Idempotency-Key over): one statement claims the key and reads the
   * tontine locked with its state, one applies the decision (contributeLocked).
   */
  async contribute(db: Knex | Knex.Transaction, caller: Pick<Caller, 'userId'>, id: string, body: { cycle: number }): Promise<Contributed> {
    return withTransaction(db, (trx) => contributeLocked(trx, caller.userId, id, body, this.now()));
  }

  /** The job: completes a cycle's held pot (tontine-held-payouts.ts), or notes one more attempt; whether it completed. */
  completeHeldPayout(db: Knex | Knex.Transaction, held: HeldPayout): Promise<boolean> {
    return withTransaction(db, (trx) => completeHeldPot(trx, held, this.now()));
  }

  /** POST /admin/held-payouts/{heldPayoutId}/return for a cycle's pot: back to the members who paid it. */
  returnHeldPayout(trx: Knex.Transaction, caller: Pick<Caller, 'userId' | 'isAdmin'>, held: HeldPayout, reason: string, current: () => Promise<HeldPayout>): Promise<void> {
    return returnHeldPot(trx, caller, held, reason, current, this.now());
  }

  /**
   * Cancels (the organizer): a forming tontine simply; an active one refunds the open cycle's
   * payments first. Once a pot has been paid out the lifecycle refuses it (409): only a platform
   * administrator can then end the tontine (`dissolve`).
   */
  async cancel(db: Knex | Knex.Transaction, caller: Pick<Caller, 'userId'>, id: string): Promise<TontineView> {
    const { userId } = caller;
    return this.act(db, userId, id, 'cancel', async (scope, at) => {
      const refundedMinor = await endTontine(scope, 'cancel', userId, at);
      await scope.events.record({ subjectType: 'tontine', subjectId: id, type: 'tontine.canceled', actorUserId: userId, payload: { refunded_minor: refundedMinor.toString() }, occurredAt: at });
    });
  }

  /**
   * POST /admin/tontines/{id}/dissolve: a platform administrator ends a forming or active
   * tontine, whoever received a pot (the only way to end one after a payout). The open
   * cycle's payments are refunded as on a cancel; the reason is kept and shown to every
   * member; one `tontine.dissolved` event, and one `tontine.member_dissolution` history entry
   * per member with that member's net position (what the others are owed or owe).
   */
  async dissolve(db: Knex | Knex.Transaction, caller: Pick<Caller, 'userId' | 'isAdmin'>, id: string, reason: string): Promise<TontineView> {
    if (!caller.isAdmin) throw new ForbiddenError('InsufficientRole', 'Only platform administrators may dissolve a tontine.');
    const text = reason.trim();
    if (text.length === 0) throw ValidationError.field('body.reason', 'reason must not be blank.');
    return withTransaction(db, async (trx) => {
      const repo = new TontineRepository(trx);
      const tontine = await repo.lock(id);
      if (!tontine) throw new TontineNotFoundError();
      const state = await readTontineState(trx, tontine, caller.userId);
      const situation = outsiderSituationFrom(tontine, state.members, 'administrator');
      assertAllowed(situation, 'dissolve');
      // A member never rules on its own group (as a party never resolves its own escrow).
      if (state.members.some((member) => member.userId === caller.userId)) {
        throw new ForbiddenError('ConflictOfInterest', 'You are a member of this tontine: you cannot dissolve it. Another platform administrator must.');
      }
      const pending: NewEvent[] = [];
      const events = { record: async (event: NewEvent) => pending.push(event) };
      const at = this.now();
      const refundedMinor = await endTontine({ trx, repo, events, tontine, situation, state }, 'dissolve', caller.userId, at);
      await repo.update(id, { dissolutionReason: text, dissolvedByUserId: caller.userId, dissolvedAt: at });
      const paidBy = await repo.paidCountsByMember(id);
      const positions = state.members.map((member) => {
        const received = state.cycles.filter((c) => c.status === 'paid_out' && c.beneficiaryUserId === member.userId).length;
        const paid = paidBy.get(member.userId) ?? 0;
        return { user_id: member.userId, net_position_minor: (tontine.contributionMinor * (BigInt(received) * BigInt(state.cycles.length) - BigInt(paid))).toString() };
      });
      pending.push({
        subjectType: 'tontine',
        subjectId: id,
        type: 'tontine.dissolved',
        actorUserId: caller.userId,
        payload: { reason: text, refunded_minor: refundedMinor.toString(), net_positions: positions },
        occurredAt: at,
      });
      for (const position of positions) {
        pending.push({ subjectType: 'tontine', subjectId: id, type: 'tontine.member_dissolution', actorUserId: caller.userId, payload: { ...position, reason: text }, occurredAt: at });
      }
      const { view, object } = await this.describe(trx, id, caller.userId, 'administrator');
      await new EventRepository(trx).recordAll(pending.map((event) => ({ ...event, object })));
      return view;
    });
  }

  /**
   * The background job's work: contributions still pending when their cycle is due become
   * `late`, one event per tontine. Safe with many instances (SKIP LOCKED); returns how many
   * contributions were marked.
   */
  async markLateContributions(options: { batchSize?: number } = {}): Promise<number> {
    const at = this.now();
    return withTransaction(this.knex, async (trx) => {
      const repo = new TontineRepository(trx);
      const events = new EventRepository(trx);
      let marked = 0;
      for (const due of await repo.lockDueForLateMarking(at, options.batchSize ?? 100)) {
        const late = await repo.markLate(due.id, due.currentCycle, at);
        if (late.length === 0) continue;
        marked += late.length;
        await events.record({ subjectType: 'tontine', subjectId: due.id, type: 'tontine.contributions_late', actorUserId: null, payload: { cycle: due.currentCycle, user_ids: late }, occurredAt: at, snapshot: tontineSnapshot });
      }
      return marked;
    });
  }

  // Internals

  /**
   * One action: locks the tontine, reads its state and works out the caller's situation (404
   * when the caller may not see it), checks the lifecycle, runs `change` and answers the
   * tontine after it, all in one transaction (`db`'s when it is one). The change's events are
   * written last, in one statement, each carrying the tontine as it then stands.
   */
  private async act(
    db: Knex | Knex.Transaction,
    userId: string,
    id: string,
    action: TontineAction,
    change: (scope: TontineScope, at: Date) => Promise<void>,
    /** How the caller sees the tontine afterwards, when no longer as a member (after leaving). */
    roleAfter?: 'former_member',
  ): Promise<TontineView> {
    return withTransaction(db, async (tx) => {
      const repo = new TontineRepository(tx);
      // The lock is a statement of its own, taken first: what is read next sees every change committed before it.
      const tontine = await repo.lock(id);
      if (!tontine) throw new TontineNotFoundError();
      const state = await readTontineState(tx, tontine, userId);
      const situation = situationFrom(tontine, userId, state);
      assertAllowed(situation, action);
      const pending: NewEvent[] = [];
      const events = { record: async (event: NewEvent) => pending.push(event) };
      await change({ trx: tx, repo, events, tontine, situation, state }, this.now());
      const { view, object } = await this.describe(tx, id, userId, roleAfter);
      await new EventRepository(tx).recordAll(pending.map((event) => ({ ...event, object })));
      return view;
    });
  }

  /** The tontine as `userId` sees it (404 when they may not), read afresh: its row and its state, two statements. */
  private async describe(db: Knex.Transaction, id: string, userId: string, roleOverride?: 'former_member' | 'administrator'): Promise<{ view: TontineView; object: TontineView }> {
    const tontine = await new TontineRepository(db).find(id);
    if (!tontine) throw new TontineNotFoundError();
    const state = await readTontineState(db, tontine, userId);
    const { exponent } = await currencies.require(db, tontine.currency);
    return describeState(tontine, state, userId, exponent, roleOverride);
  }
}
