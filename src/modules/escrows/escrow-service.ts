import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Caller, WindowKey } from '../../contract';
import { ForbiddenError } from '../../errors';
import { toPage, type Page } from '../../db/keyset';
import { withTransaction } from '../../db/transaction';
import type { Clock } from '../../clock';
import { parsePartyIdentifier, UserRepository, type PartyIdentifier } from '../auth';
import { EventRepository, type HistoryEntry } from '../events';
import { currencies, parseAmount } from '../ledger';
import { DecisionWindow, type PlannedPosting } from '../writes';
import type { HeldPayout } from '../held-payouts';
import { PendingKey, type ResourceStatusReader } from '../idempotency';
import { CounterpartyNotFoundError, EscrowNotFoundError, SelfEscrowError } from './escrow-errors';
import { feeFor, fundingAmount, refundSettlement, releaseSettlement, type FeePayer } from './escrow-fee';
import { authorize, capacitiesOf, INITIAL_ESCROW_STATUS, isDueForRelease, statusAfter, statusAfterRelease, type EscrowStatus, type SettlementOutcome } from './escrow-lifecycle';
import { EVENT_READER, presentEscrow, presentEscrows, type EscrowView } from './escrow-presenter';
import { EscrowRepository, type Escrow, type EscrowWithHistory, type LockedEscrow, type ResolutionOutcome } from './escrow-repository';
import { checkResolutionShape, feeOf, fundingParties, fundingPosting, resolutionPlan, settle, settlementParties } from './escrow-settlement';
import { readConnection } from '../../db/read-routing';
import { commitEscrowChange, decideEscrowChange } from './escrow-commit';
import { escrowDecider, type EscrowSubmission, type WindowedEscrowAction } from './escrow-window';
import { completedRelease, returnedRelease, type EscrowChange } from './escrow-payouts';

export const DEFAULT_INSPECTION_PERIOD_SECONDS = 259_200;

export interface CreateEscrowInput {
  role: 'buyer' | 'seller';
  counterpartyIdentifier: string;
  amount: number | string;
  currency: string;
  description: string;
  inspectionPeriodSeconds?: number;
  reference?: string;
  feePayer?: FeePayer;
}

/** One action on an existing escrow, with its parameters. */
export type EscrowCommand =
  | { action: 'fund' | 'accept' | 'refund' | 'cancel' }
  | { action: 'deliver'; trackingReference?: string; note?: string }
  | { action: 'dispute'; reason: string }
  | { action: 'resolve'; outcome: ResolutionOutcome; sellerAmount?: number | string; note?: string };

export type EscrowPage = Page<EscrowView>;

export interface EscrowListOptions {
  status?: EscrowStatus;
  role?: 'buyer' | 'seller';
  limit: number;
  startingAfter?: string;
}

export interface EscrowServiceDeps {
  knex: Knex;
  /** ESCROW_FEE_BPS: the fee rate agreed by escrows created from now on. */
  feeBps: number;
  /** ESCROW_MIN_FEE: the minimum fee per currency (minor units) agreed by escrows created from now on. */
  minFeeMinor?: Readonly<Record<string, bigint>>;
  clock: Clock;
  logger?: Pick<Logger, 'error' | 'warn'>;
  /** After a failed automatic release, the job tries that escrow again this much later. */
  releaseRetryMs?: number;
  /** Group commit of the escrow actions that move money: the window (ms, <= 2) and the largest batch (<= 64). */
  batch?: { windowMs?: number; maxItems?: number };
}

const COUNTERPARTY_FIELD = { path: 'body.counterparty_identifier', name: 'counterparty_identifier' };

/** An e-mail (lower-cased) or a telephone number in international form, normalised to E.164. */
function parseCounterparty(raw: string): PartyIdentifier {
  return parsePartyIdentifier(raw, COUNTERPARTY_FIELD);
}

/** The status an escrow's Idempotency-Key reports on a replay: the escrow's own, read now (src/services.ts wires it). */
export const escrowStatusOf: ResourceStatusReader = (db, id) => new EscrowRepository(db).statusOf(id);

/**
 * Escrow transactions (see escrow-lifecycle.ts for the state machine, escrow-fee.ts for the fee
 * and escrow-settlement.ts for the postings). Every action runs the one write path
 * (src/modules/writes): one statement claims the request's Idempotency-Key, then locks the
 * escrow row and reads its history and holding account; the lifecycle and the posting plan
 * decide in memory (the row after, its ONE event carrying the escrow as the API returns it:
 * the history read with the lock plus the event); one statement applies the decision (the
 * posting through ledger_post, the row, the event, the key's completion), all in one
 * transaction: the one the HTTP pipeline opens. Two actions racing on one escrow are
 * serialised by the row lock: the second sees the first's status and gets 409.
 */
export class EscrowService {
  private readonly knex: Knex;
  private readonly now: Clock;
  private readonly releaseRetryMs: number;
  /** The group commit of fund and accept (its batch sizes: benchmarks). */
  readonly window: DecisionWindow<EscrowSubmission, EscrowWithHistory>;

  constructor(private readonly deps: EscrowServiceDeps) {
    if (!Number.isInteger(deps.feeBps) || deps.feeBps < 0 || deps.feeBps > 10_000) throw new RangeError('the escrow fee is 0 to 10000 basis points');
    this.knex = deps.knex;
    this.now = deps.clock;
    this.releaseRetryMs = deps.releaseRetryMs ?? 60_000;
    const rules = {
      decide: (locked: LockedEscrow | undefined, { caller, action }: EscrowSubmission, now: Date) =>
        this.changeFor(this.knex, locked, caller, { action }, now).then((change) => decideEscrowChange(this.knex, locked as LockedEscrow, change, caller.userId, now)),
      alone: (trx: Knex.Transaction, { caller, escrowId, action }: EscrowSubmission) => this.actInTransaction(trx, caller, escrowId, { action }),
    };
    this.window = new DecisionWindow(this.knex, escrowDecider(this.knex, rules), () => this.now(), deps.logger, deps.batch);
  }

  /**
   * POST /escrows/{escrowId}/fund and /accept on the one write path, a window at a time
   * (escrow-window.ts): `key` is the Idempotency-Key the pipeline hands over, claimed and
   * completed by the window's statement.
   */
  async actInWindow(key: WindowKey, caller: Pick<Caller, 'userId' | 'isAdmin'>, escrowId: string, action: WindowedEscrowAction): Promise<EscrowView> {
    if (!(key instanceof PendingKey)) throw new TypeError('an escrow action in a window needs the Idempotency-Key the pipeline hands over');
    const outcome = await this.window.submit({ caller, escrowId, action, key });
    if ('error' in outcome) throw outcome.error;
    return this.present(this.knex, outcome.after, caller);
  }

  /** POST /escrows, in `db`'s transaction (the pipeline's, which the Idempotency-Key completes in). */
  async create(db: Knex | Knex.Transaction, caller: Pick<Caller, 'userId' | 'isAdmin'>, input: CreateEscrowInput): Promise<EscrowView> {
    return withTransaction(db, async (trx) => this.present(trx, await this.createInTransaction(trx, caller, input), caller));
  }

  /** Creates an escrow inside `trx`, the escrow with its history (`create` presents it). */
  private async createInTransaction(trx: Knex.Transaction, caller: Pick<Caller, 'userId' | 'isAdmin'>, input: CreateEscrowInput): Promise<EscrowWithHistory> {
    const currency = await currencies.require(trx, input.currency, 'body.currency');
    const amountMinor = parseAmount(input.amount, currency.exponent, { field: 'body.amount' });
    const counterparty = parseCounterparty(input.counterpartyIdentifier);
    return this.createIn(trx, caller, { ...input, currency: currency.code }, amountMinor, counterparty);
  }

  /** POST /escrows/{escrowId}/{action}, in `db`'s transaction (the pipeline's, which the Idempotency-Key completes in). */
  async act(db: Knex | Knex.Transaction, caller: Pick<Caller, 'userId' | 'isAdmin'>, escrowId: string, command: EscrowCommand): Promise<EscrowView> {
    if (command.action === 'resolve') checkResolutionShape(command);
    return withTransaction(db, async (trx) => this.present(trx, await this.actInTransaction(trx, caller, escrowId, command), caller));
  }

  /** One action inside `trx`, the escrow with its history (`act` presents it). */
  private async actInTransaction(trx: Knex.Transaction, caller: Pick<Caller, 'userId' | 'isAdmin'>, escrowId: string, command: EscrowCommand): Promise<EscrowWithHistory> {
    const locked = await new EscrowRepository(trx).lockForDecision(escrowId);
    const now = this.now();
    return this.commit(trx, locked as LockedEscrow, await this.changeFor(trx, locked, caller, command, now), caller.userId, now);
  }

  /** What `command` by `caller` changes on the escrow read: 404 for an escrow the caller may not see, the lifecycle's refusal, or the change (nothing written). */
  private changeFor(db: Knex | Knex.Transaction, locked: LockedEscrow | undefined, caller: Pick<Caller, 'userId' | 'isAdmin'>, command: EscrowCommand, now: Date): Promise<EscrowChange> {
    const capacities = locked ? capacitiesOf(locked.escrow, caller) : undefined;
    if (!locked || !capacities || capacities.size === 0) throw new EscrowNotFoundError();
    const escrow = locked.escrow;
    authorize(command.action, escrow, capacities, now);
    // Every status this action writes comes from the lifecycle (checked again on the row written: its status as read).
    const statusFor = (outcome?: SettlementOutcome) => statusAfter(command.action, escrow, capacities, now, outcome);
    return this.changeOf(db, locked, command, caller.userId, now, statusFor);
  }

  /** GET /escrows/{escrowId}: the parties and administrators; anyone else 404. */
  async get(caller: Pick<Caller, 'userId' | 'isAdmin'>, escrowId: string): Promise<EscrowView> {
    const found = await new EscrowRepository(this.knex).findWithHistory(escrowId);
    if (!found || capacitiesOf(found.escrow, caller).size === 0) throw new EscrowNotFoundError();
    return this.present(this.knex, found, caller);
  }

  /** GET /escrows: the caller's escrows as buyer or seller, newest first. */
  list(caller: Pick<Caller, 'userId' | 'isAdmin'>, options: EscrowListOptions): Promise<EscrowPage> {
    return this.page(caller, { ...options, partyUserId: caller.userId });
  }

  /** GET /admin/escrows: every escrow; administrators only. */
  listAll(caller: Pick<Caller, 'userId' | 'isAdmin'>, options: Omit<EscrowListOptions, 'role'>): Promise<EscrowPage> {
    if (!caller.isAdmin) throw new ForbiddenError('InsufficientRole', 'Only platform administrators may list every escrow.');
    return this.page(caller, options);
  }

  /**
   * The automatic release: releases, one transaction each, up to `batchSize` delivered
   * escrows whose inspection period has ended, exactly as an accept would (one `escrow.released`
   * event, accepted by `automatic`). Each escrow is
   * claimed with FOR UPDATE SKIP LOCKED, so instances running this at once never release one
   * twice nor wait for each other; a second run finds nothing left to do. An escrow whose
   * release fails (a frozen seller wallet) is retried `releaseRetryMs` later, after the others.
   * Returns how many were released.
   */
  async releaseDue(options: { batchSize: number }): Promise<number> {
    const now = this.now();
    let released = 0;
    for (let attempt = 0; attempt < options.batchSize; attempt += 1) {
      let current: EscrowWithHistory | undefined;
      try {
        const releasedOne = await withTransaction(this.knex, async (trx) => {
          const locked = await new EscrowRepository(trx).lockNextDueForRelease(now);
          current = locked;
          if (!locked || !isDueForRelease(locked.escrow, now)) return false;
          const due = locked.escrow;
          await this.commit(trx, locked, this.acceptance(locked, 'automatic', now, (outcome) => statusAfterRelease(due, now, outcome)), null, now);
          return true;
        });
        if (!releasedOne) break;
        released += 1;
      } catch (error) {
        if (!current) throw error;
        this.deps.logger?.error({ err: error, escrowId: current.escrow.id }, 'automatic escrow release failed; it is retried later');
        await new EscrowRepository(this.knex).postponeRelease(current.escrow.id, new Date(now.getTime() + this.releaseRetryMs));
      }
    }
    return released;
  }

  /**
   * The job: completes the escrow's held payout in `db`'s transaction, or records one more
   * attempt when its recipient's limits (the seller's, or the buyer's of a split) still refuse it. Answers whether it completed; any other
   * refusal (a frozen seller wallet) is thrown.
   */
  async completeHeldPayout(db: Knex | Knex.Transaction, held: HeldPayout): Promise<boolean> {
    return withTransaction(db, async (trx) => {
      const locked = await new EscrowRepository(trx).lockForDecision(held.subjectId);
      if (!locked || locked.escrow.payoutId !== held.id || locked.escrow.status !== 'accepted') throw new EscrowNotFoundError();
      const now = this.now();
      const { change, retry } = completedRelease(locked, held, now);
      const after = await commitEscrowChange(trx, locked, change, null, now, { retry, recipientUserId: held.recipientUserId });
      return after.escrow.status === 'released';
    });
  }

  /**
   * POST /admin/held-payouts/{heldPayoutId}/return for an escrow (an administrator who is not a
   * party): everything the buyer paid goes back; a split's share for the buyer is paid to the buyer.
   */
  async returnHeldPayout(trx: Knex.Transaction, caller: Pick<Caller, 'userId' | 'isAdmin'>, held: HeldPayout, reason: string, current: () => Promise<HeldPayout>): Promise<void> {
    const locked = await new EscrowRepository(trx).lockForDecision(held.subjectId);
    if (!locked) throw new EscrowNotFoundError();
    // A payout settled already (the seller's, once its completion held the buyer's share) is no longer held.
    const stillHeld = await current();
    if (locked.escrow.payoutId !== held.id) throw new EscrowNotFoundError();
    const now = this.now();
    const change = returnedRelease(locked, stillHeld, { userId: caller.userId, capacities: capacitiesOf(locked.escrow, caller) }, reason, now);
    await commitEscrowChange(trx, locked, change, caller.userId, now);
  }

  /** What `command` changes on the locked escrow (and the posting it makes when it moves money), and its event: decided, nothing written. */
  private async changeOf(
    db: Knex | Knex.Transaction,
    locked: LockedEscrow,
    command: EscrowCommand,
    actorUserId: string,
    now: Date,
    statusFor: (outcome?: SettlementOutcome) => EscrowStatus,
  ): Promise<EscrowChange> {
    const escrow = locked.escrow;
    switch (command.action) {
      case 'fund': {
        const payload = { amount_minor: fundingAmount(escrow.amountMinor, feeOf(escrow)).toString() };
        const posting = { plan: fundingPosting(escrow), column: 'funding_posting_id' as const, parties: fundingParties() };
        return { type: 'escrow.funded', payload, changes: { status: statusFor(), fundedAt: now }, posting };
      }
      case 'deliver': {
        const inspectionEndsAt = new Date(now.getTime() + escrow.inspectionPeriodSeconds * 1000);
        const changes = { status: statusFor(), deliveredAt: now, inspectionEndsAt, autoReleaseAt: inspectionEndsAt, trackingReference: command.trackingReference ?? null, deliveryNote: command.note ?? null };
        return { type: 'escrow.delivered', payload: { inspection_ends_at: inspectionEndsAt.toISOString() }, changes };
      }
      case 'accept':
        return this.acceptance(locked, 'buyer', now, statusFor);
      case 'dispute':
        return { type: 'escrow.disputed', payload: { reason: command.reason }, changes: { status: statusFor(), disputeReason: command.reason, disputedAt: now } };
      case 'refund': {
        const settled = settle(locked, refundSettlement(escrow.amountMinor, feeOf(escrow)), statusFor, now);
        return { type: settledEvent(settled.status), payload: settled.amounts, changes: settled.changes, posting: settlementOf(settled.posting, escrow) };
      }
      case 'cancel':
        return { type: 'escrow.canceled', payload: {}, changes: { status: statusFor(), canceledAt: now } };
      case 'resolve': {
        const { plan, sellerAmountMinor } = await resolutionPlan(db as Knex.Transaction, escrow, command);
        const settled = settle(locked, plan, statusFor, now);
        const resolution = { resolutionOutcome: command.outcome, resolutionSellerAmountMinor: sellerAmountMinor, resolutionNote: command.note ?? null, resolvedByUserId: actorUserId, resolvedAt: now };
        const payload = { outcome: command.outcome, ...(sellerAmountMinor ? { seller_amount_minor: sellerAmountMinor.toString() } : {}), ...settled.amounts };
        return { type: 'escrow.resolved', payload, changes: { ...resolution, ...settled.changes }, posting: settlementOf(settled.posting, escrow) };
      }
    }
  }

  /** An accept, by the buyer or by the automatic release: the release settlement, one `escrow.released` event. */
  private acceptance(locked: LockedEscrow, acceptedBy: 'buyer' | 'automatic', now: Date, statusFor: (outcome: SettlementOutcome) => EscrowStatus): EscrowChange {
    const escrow = locked.escrow;
    const settled = settle(locked, releaseSettlement(escrow.amountMinor, feeOf(escrow)), statusFor, now);
    return { type: settledEvent(settled.status), payload: { accepted_by: acceptedBy, ...settled.amounts }, changes: { acceptedAt: now, ...settled.changes }, posting: settlementOf(settled.posting, escrow) };
  }

  /** Writes the change and its one event (escrow-commit.ts): a release its seller's limits refuse is held instead. */
  private commit(trx: Knex.Transaction, locked: LockedEscrow, change: EscrowChange, actorUserId: string | null, now: Date): Promise<EscrowWithHistory> {
    return commitEscrowChange(trx, locked, change, actorUserId, now);
  }

  private async record(trx: Knex.Transaction, after: EscrowWithHistory, change: Pick<EscrowChange, 'type' | 'payload'>, previousStatus: EscrowStatus | null): Promise<void> {
    const event = after.history[after.history.length - 1] as HistoryEntry;
    await new EventRepository(trx).record({
      subjectType: 'escrow',
      subjectId: after.escrow.id,
      type: change.type,
      actorUserId: event.actorUserId,
      payload: change.payload,
      occurredAt: event.occurredAt,
      object: await presentEscrow(trx, after.escrow, after.history, EVENT_READER, event.occurredAt),
      previousStatus,
    });
  }

  private async createIn(trx: Knex.Transaction, caller: Pick<Caller, 'userId' | 'isAdmin'>, input: CreateEscrowInput, amountMinor: bigint, counterparty: PartyIdentifier): Promise<EscrowWithHistory> {
    const repository = new EscrowRepository(trx);
    const users = new UserRepository(trx);
    const other = await users.findReachable(counterparty);
    if (!other) throw new CounterpartyNotFoundError();
    if (other.id === caller.userId) throw new SelfEscrowError();
    const self = await users.findContact(caller.userId);
    if (!self) throw new EscrowNotFoundError();
    const identifierOf = (user: { email: string | null; phone: string | null }) => (user.email ?? user.phone) as string;
    const [buyer, seller] = input.role === 'buyer' ? [self, other] : [other, self];
    const fee = feeFor(amountMinor, this.deps.feeBps, input.feePayer ?? 'buyer', this.deps.minFeeMinor?.[input.currency] ?? 0n);
    const now = this.now();
    const escrow = await repository.insert({
      id: crypto.randomUUID(),
      buyerUserId: buyer.id,
      sellerUserId: seller.id,
      createdByUserId: caller.userId,
      buyerIdentifier: identifierOf(buyer),
      sellerIdentifier: identifierOf(seller),
      status: INITIAL_ESCROW_STATUS,
      currency: input.currency,
      amountMinor,
      feeBps: fee.bps,
      feePayer: fee.payer,
      feeMinor: fee.totalMinor,
      feeMinimumMinor: fee.minimumMinor,
      buyerFeeMinor: fee.buyerShareMinor,
      sellerFeeMinor: fee.sellerShareMinor,
      description: input.description,
      reference: input.reference ?? null,
      inspectionPeriodSeconds: input.inspectionPeriodSeconds ?? DEFAULT_INSPECTION_PERIOD_SECONDS,
      createdAt: now,
      updatedAt: now,
    });
    const created = { escrow, history: [{ type: 'escrow.created', actorUserId: caller.userId, occurredAt: now }] };
    const payload = { role: input.role, amount_minor: amountMinor.toString(), currency: escrow.currency, fee_payer: fee.payer };
    await this.record(trx, created, { type: 'escrow.created', payload }, null);
    return created;
  }

  private async page(caller: Pick<Caller, 'userId' | 'isAdmin'>, options: EscrowListOptions & { partyUserId?: string }): Promise<EscrowPage> {
    const db = readConnection(this.knex);
    const rows = await new EscrowRepository(db).page(options, { limit: options.limit, startingAfter: options.startingAfter });
    const page = toPage(rows, options.limit);
    return { ...page, data: await presentEscrows(db, page.data, caller, this.now()) };
  }

  /** The escrow as `caller` sees it, from the state in hand (nothing is read again). */
  private present(db: Knex | Knex.Transaction, state: EscrowWithHistory, caller: Pick<Caller, 'userId' | 'isAdmin'>): Promise<EscrowView> {
    return presentEscrow(db, state.escrow, state.history, caller, this.now());
  }
}

/** A settlement's posting, with how its refusal names the parties. */
function settlementOf(plan: PlannedPosting, escrow: Escrow): NonNullable<EscrowChange['posting']> {
  return { plan, column: 'settlement_posting_id', parties: settlementParties(escrow) };
}

/** The event of a settlement, named after the status it leaves the escrow in. */
function settledEvent(status: EscrowStatus): string {
  return status === 'released' ? 'escrow.released' : 'escrow.refunded';
}
