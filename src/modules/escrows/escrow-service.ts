import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { ForbiddenError, ValidationError } from '../../errors';
import { toPage, type Page } from '../../db/keyset';
import { withTransaction } from '../../db/transaction';
import type { Clock } from '../../clock';
import { parsePartyIdentifier, UserRepository, type PartyIdentifier } from '../auth';
import { EventRepository } from '../events';
import { creditedAccountOf, currencies, parseAmount, post, shardedPlatformAccount, walletOf, walletRefusal, type EntryInput, type LedgerAccount } from '../ledger';
import type { IdempotencyService } from '../idempotency';
import { CounterpartyNotFoundError, EscrowNotFoundError, SelfEscrowError } from './escrow-errors';
import { feeFor, fundingAmount, refundSettlement, releaseSettlement, splitSettlement, type EscrowFee, type FeePayer, type Settlement } from './escrow-fee';
import { authorize, capacitiesOf, INITIAL_ESCROW_STATUS, isDueForRelease, statusAfter, statusAfterRelease, type EscrowStatus, type SettlementOutcome } from './escrow-lifecycle';
import { presentEscrows, type EscrowCaller, type EscrowView } from './escrow-presenter';
import { EscrowRepository, type Escrow, type ResolutionOutcome } from './escrow-repository';

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
  idempotency: IdempotencyService;
  /** ESCROW_FEE_BPS: the fee rate agreed by escrows created from now on. */
  feeBps: number;
  /** ESCROW_MIN_FEE: the minimum fee per currency (minor units) agreed by escrows created from now on. */
  minFeeMinor?: Readonly<Record<string, bigint>>;
  clock: Clock;
  logger?: Pick<Logger, 'error'>;
  /** After a failed automatic release, the job tries that escrow again this much later. */
  releaseRetryMs?: number;
}

const COUNTERPARTY_FIELD = { path: 'body.counterparty_identifier', name: 'counterparty_identifier' };

/** An e-mail (lower-cased) or a telephone number in international form, normalised to E.164. */
function parseCounterparty(raw: string): PartyIdentifier {
  return parsePartyIdentifier(raw, COUNTERPARTY_FIELD);
}

function feeOf(escrow: Escrow): EscrowFee {
  return {
    bps: escrow.feeBps,
    payer: escrow.feePayer,
    minimumMinor: escrow.feeMinimumMinor,
    totalMinor: escrow.feeMinor,
    buyerShareMinor: escrow.buyerFeeMinor,
    sellerShareMinor: escrow.sellerFeeMinor,
  };
}

/**
 * Escrow transactions (see escrow-lifecycle.ts for the state machine and escrow-fee.ts for
 * the fee). Every state change locks the escrow row first (then the ledger locks its
 * accounts), checks the rules, posts through the ledger, updates the row and records its
 * events, all in one transaction: the one the HTTP pipeline opens, so an Idempotency-Key
 * completes in it. Two actions racing on one
 * escrow are serialised by the row lock: the second sees the first's status and gets 409.
 */
export class EscrowService {
  private readonly knex: Knex;
  private readonly now: Clock;
  private readonly releaseRetryMs: number;

  constructor(private readonly deps: EscrowServiceDeps) {
    if (!Number.isInteger(deps.feeBps) || deps.feeBps < 0 || deps.feeBps > 10_000) throw new RangeError('the escrow fee is 0 to 10000 basis points');
    this.knex = deps.knex;
    this.now = deps.clock;
    this.releaseRetryMs = deps.releaseRetryMs ?? 60_000;
    deps.idempotency.registerResourceStatus('escrow', (db, id) => new EscrowRepository(db).statusOf(id));
  }

  /** POST /escrows, in `db`'s transaction (the pipeline's, which the Idempotency-Key completes in). */
  async create(db: Knex | Knex.Transaction, caller: EscrowCaller, input: CreateEscrowInput): Promise<EscrowView> {
    return withTransaction(db, async (trx) => this.presentOne(trx, await this.createInTransaction(trx, caller, input), caller));
  }

  /** Creates an escrow inside the caller's transaction (the demo seed uses it directly). */
  async createInTransaction(trx: Knex.Transaction, caller: EscrowCaller, input: CreateEscrowInput): Promise<Escrow> {
    const currency = await currencies.require(trx, input.currency, 'body.currency');
    const amountMinor = parseAmount(input.amount, currency.exponent, { field: 'body.amount' });
    const counterparty = parseCounterparty(input.counterpartyIdentifier);
    return this.createIn(trx, caller, { ...input, currency: currency.code }, amountMinor, counterparty);
  }

  /** POST /escrows/{escrowId}/{action}, in `db`'s transaction (the pipeline's, which the Idempotency-Key completes in). */
  async act(db: Knex | Knex.Transaction, caller: EscrowCaller, escrowId: string, command: EscrowCommand): Promise<EscrowView> {
    if (command.action === 'resolve') checkResolutionShape(command);
    return withTransaction(db, async (trx) => this.presentOne(trx, await this.actInTransaction(trx, caller, escrowId, command), caller));
  }

  /** One action inside the caller's transaction, without idempotency (the demo seed; `act` wraps it). */
  async actInTransaction(trx: Knex.Transaction, caller: EscrowCaller, escrowId: string, command: EscrowCommand): Promise<Escrow> {
    const repository = new EscrowRepository(trx);
    const escrow = await repository.lockById(escrowId);
    const capacities = escrow ? capacitiesOf(escrow, caller) : undefined;
    if (!escrow || !capacities || capacities.size === 0) throw new EscrowNotFoundError();
    const now = this.now();
    authorize(command.action, escrow, capacities, now);
    const events = new EventRepository(trx);
    // Every status this action writes comes from the lifecycle (checked again on the locked row).
    const statusFor = (outcome?: SettlementOutcome) => statusAfter(command.action, escrow, capacities, now, outcome);
    const record = (type: string, payload?: Record<string, unknown>) =>
      events.record({ subjectType: 'escrow', subjectId: escrow.id, type, actorUserId: caller.userId, payload, occurredAt: now });

    switch (command.action) {
      case 'fund': {
        const posting = await this.fund(trx, escrow);
        await record('escrow.funded', { amount_minor: fundingAmount(escrow.amountMinor, feeOf(escrow)).toString() });
        return repository.update(escrow.id, { status: statusFor(), fundingPostingId: posting, fundedAt: now, updatedAt: now });
      }
      case 'deliver': {
        const inspectionEndsAt = new Date(now.getTime() + escrow.inspectionPeriodSeconds * 1000);
        await record('escrow.delivered', { inspection_ends_at: inspectionEndsAt.toISOString() });
        return repository.update(escrow.id, {
          status: statusFor(),
          deliveredAt: now,
          inspectionEndsAt,
          autoReleaseAt: inspectionEndsAt,
          trackingReference: command.trackingReference ?? null,
          deliveryNote: command.note ?? null,
          updatedAt: now,
        });
      }
      case 'accept':
        await record('escrow.accepted');
        return this.release(trx, escrow, caller.userId, now, statusFor);
      case 'dispute':
        await record('escrow.disputed', { reason: command.reason });
        return repository.update(escrow.id, { status: statusFor(), disputeReason: command.reason, disputedAt: now, updatedAt: now });
      case 'refund':
        return this.settle(trx, escrow, refundSettlement(escrow.amountMinor, feeOf(escrow)), statusFor, caller.userId, now);
      case 'cancel':
        await record('escrow.canceled');
        return repository.update(escrow.id, { status: statusFor(), canceledAt: now, updatedAt: now });
      case 'resolve': {
        const settlement = await this.resolution(trx, escrow, command);
        await record('escrow.resolved', { outcome: command.outcome, ...(settlement.sellerAmountMinor ? { seller_amount_minor: settlement.sellerAmountMinor.toString() } : {}) });
        await repository.update(escrow.id, {
          resolutionOutcome: command.outcome,
          resolutionSellerAmountMinor: settlement.sellerAmountMinor,
          resolutionNote: command.note ?? null,
          resolvedByUserId: caller.userId,
          resolvedAt: now,
        });
        return this.settle(trx, escrow, settlement.plan, statusFor, caller.userId, now);
      }
    }
  }

  /** GET /escrows/{escrowId}: the parties and administrators; anyone else 404. */
  async get(caller: EscrowCaller, escrowId: string): Promise<EscrowView> {
    const escrow = await new EscrowRepository(this.knex).findById(escrowId);
    if (!escrow || capacitiesOf(escrow, caller).size === 0) throw new EscrowNotFoundError();
    return this.presentOne(this.knex, escrow, caller);
  }

  /** GET /escrows: the caller's escrows as buyer or seller, newest first. */
  list(caller: EscrowCaller, options: EscrowListOptions): Promise<EscrowPage> {
    return this.page(caller, { ...options, partyUserId: caller.userId });
  }

  /** GET /admin/escrows: every escrow; administrators only. */
  listAll(caller: EscrowCaller, options: Omit<EscrowListOptions, 'role'>): Promise<EscrowPage> {
    if (!caller.isAdmin) throw new ForbiddenError('InsufficientRole', 'Only platform administrators may list every escrow.');
    return this.page(caller, options);
  }

  /**
   * The automatic release: releases, one transaction each, up to `batchSize` delivered
   * escrows whose inspection period has ended, exactly as an accept would. Each escrow is
   * claimed with FOR UPDATE SKIP LOCKED, so instances running this at once never release one
   * twice nor wait for each other; a second run finds nothing left to do. An escrow whose
   * release fails (a frozen seller wallet) is retried `releaseRetryMs` later, after the others.
   * Returns how many were released.
   */
  async releaseDue(options: { batchSize: number }): Promise<number> {
    const now = this.now();
    let released = 0;
    for (let attempt = 0; attempt < options.batchSize; attempt += 1) {
      let current: Escrow | undefined;
      try {
        const releasedOne = await withTransaction(this.knex, async (trx) => {
          current = await new EscrowRepository(trx).lockNextDueForRelease(now);
          if (!current || !isDueForRelease(current, now)) return false;
          await new EventRepository(trx).record({ subjectType: 'escrow', subjectId: current.id, type: 'escrow.accepted', actorUserId: null, payload: { automatic: true }, occurredAt: now });
          const due = current;
          await this.release(trx, due, null, now, (outcome) => statusAfterRelease(due, now, outcome));
          return true;
        });
        if (!releasedOne) break;
        released += 1;
      } catch (error) {
        if (!current) throw error;
        this.deps.logger?.error({ err: error, escrowId: current.id }, 'automatic escrow release failed; it is retried later');
        await new EscrowRepository(this.knex).postponeRelease(current.id, new Date(now.getTime() + this.releaseRetryMs));
      }
    }
    return released;
  }

  private async createIn(trx: Knex.Transaction, caller: EscrowCaller, input: CreateEscrowInput, amountMinor: bigint, counterparty: PartyIdentifier): Promise<Escrow> {
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
    await new EventRepository(trx).record({
      subjectType: 'escrow',
      subjectId: escrow.id,
      type: 'escrow.created',
      actorUserId: caller.userId,
      payload: { role: input.role, amount_minor: amountMinor.toString(), currency: escrow.currency, fee_payer: fee.payer },
      occurredAt: now,
    });
    return escrow;
  }

  /** Buyer wallet -> holding account: the amount plus the buyer's fee share. Returns the posting id. */
  private async fund(trx: Knex.Transaction, escrow: Escrow): Promise<string> {
    const paid = fundingAmount(escrow.amountMinor, feeOf(escrow));
    const wallet = await walletOf(trx, escrow.buyerUserId, escrow.currency);
    const holding = await shardedPlatformAccount(trx, 'escrow_holding', escrow.currency, escrow.id);
    try {
      const posting = await post(trx, {
        kind: 'escrow.funding',
        reference: escrow.id,
        metadata: { escrow_id: escrow.id },
        entries: [
          { accountId: wallet.id, amountMinor: -paid },
          { accountId: holding.id, amountMinor: paid },
        ],
      });
      return posting.id;
    } catch (error) {
      throw walletRefusal(error, { parties: new Map([[wallet.id, 'buyer']]), defaultParty: 'buyer', covers: 'the amount plus your share of the fee' });
    }
  }

  private release(trx: Knex.Transaction, escrow: Escrow, actorUserId: string | null, now: Date, statusFor: (outcome: SettlementOutcome) => EscrowStatus): Promise<Escrow> {
    return this.settle(trx, escrow, releaseSettlement(escrow.amountMinor, feeOf(escrow)), statusFor, actorUserId, now, { acceptedAt: now });
  }

  /**
   * The one settlement posting of an escrow (holding -> seller, buyer, fee account; its
   * (kind, reference) is unique, so no escrow is settled twice), the row's final status (the
   * lifecycle's, from what the settlement pays: `statusFor`) and its event.
   */
  private async settle(
    trx: Knex.Transaction,
    escrow: Escrow,
    plan: Settlement,
    statusFor: (outcome: SettlementOutcome) => EscrowStatus,
    actorUserId: string | null,
    now: Date,
    extra: Partial<Escrow> = {},
  ): Promise<Escrow> {
    const holding = await holdingAccountOf(trx, escrow);
    const entries: EntryInput[] = [{ accountId: holding.id, amountMinor: -plan.heldMinor }];
    const buyerWalletId = plan.toBuyerMinor > 0n ? (await walletOf(trx, escrow.buyerUserId, escrow.currency)).id : undefined;
    if (plan.toSellerMinor > 0n) entries.push({ accountId: (await walletOf(trx, escrow.sellerUserId, escrow.currency)).id, amountMinor: plan.toSellerMinor });
    if (buyerWalletId) entries.push({ accountId: buyerWalletId, amountMinor: plan.toBuyerMinor });
    if (plan.feeMinor > 0n) entries.push({ accountId: (await shardedPlatformAccount(trx, 'fees', escrow.currency, escrow.id)).id, amountMinor: plan.feeMinor });
    const status = statusFor(plan);
    let postingId: string;
    try {
      const posting = await post(
        trx,
        { kind: 'escrow.settlement', reference: escrow.id, metadata: { escrow_id: escrow.id, status }, entries },
        // Money going back to the buyer alone is a reversal: it reaches even a frozen wallet.
        { allowFrozen: status === 'refunded' },
      );
      postingId = posting.id;
    } catch (error) {
      // A split pays both parties: the ledger names the account it found frozen.
      throw walletRefusal(error, { parties: new Map(buyerWalletId ? [[buyerWalletId, 'buyer' as const]] : []), defaultParty: 'seller', covers: 'this settlement' });
    }
    await new EventRepository(trx).record({
      subjectType: 'escrow',
      subjectId: escrow.id,
      type: status === 'released' ? 'escrow.released' : 'escrow.refunded',
      actorUserId,
      payload: { to_seller_minor: plan.toSellerMinor.toString(), to_buyer_minor: plan.toBuyerMinor.toString(), fee_minor: plan.feeMinor.toString() },
      occurredAt: now,
    });
    return new EscrowRepository(trx).update(escrow.id, {
      ...extra,
      status,
      settlementPostingId: postingId,
      settledToSellerMinor: plan.toSellerMinor,
      settledToBuyerMinor: plan.toBuyerMinor,
      settledFeeMinor: plan.feeMinor,
      ...(status === 'released' ? { releasedAt: now } : { refundedAt: now }),
      updatedAt: now,
    });
  }

  private async resolution(
    trx: Knex.Transaction,
    escrow: Escrow,
    command: Extract<EscrowCommand, { action: 'resolve' }>,
  ): Promise<{ plan: Settlement; sellerAmountMinor: bigint | null }> {
    const fee = feeOf(escrow);
    if (command.outcome === 'release') return { plan: releaseSettlement(escrow.amountMinor, fee), sellerAmountMinor: null };
    if (command.outcome === 'refund') return { plan: refundSettlement(escrow.amountMinor, fee), sellerAmountMinor: null };
    const { exponent } = await currencies.require(trx, escrow.currency);
    const sellerAmountMinor = parseAmount(command.sellerAmount, exponent, { field: 'body.seller_amount' });
    if (sellerAmountMinor >= escrow.amountMinor) {
      throw ValidationError.field('body.seller_amount', 'seller_amount must be less than the escrow amount (use the outcome "release" to pay the seller everything).');
    }
    return { plan: splitSettlement(escrow.amountMinor, fee, sellerAmountMinor), sellerAmountMinor };
  }

  private async page(caller: EscrowCaller, options: EscrowListOptions & { partyUserId?: string }): Promise<EscrowPage> {
    const rows = await new EscrowRepository(this.knex).page(options, { limit: options.limit, startingAfter: options.startingAfter });
    const page = toPage(rows, options.limit);
    return { ...page, data: await presentEscrows(this.knex, page.data, caller, this.now()) };
  }

  private async presentOne(db: Knex | Knex.Transaction, escrow: Escrow, caller: EscrowCaller): Promise<EscrowView> {
    const [view] = await presentEscrows(db, [escrow], caller, this.now());
    return view as EscrowView;
  }
}

function checkResolutionShape(command: Extract<EscrowCommand, { action: 'resolve' }>): void {
  if (command.outcome === 'split' && command.sellerAmount === undefined) {
    throw ValidationError.field('body.seller_amount', 'seller_amount is required with the outcome "split".');
  }
  if (command.outcome !== 'split' && command.sellerAmount !== undefined) {
    throw ValidationError.field('body.seller_amount', 'seller_amount is only for the outcome "split".');
  }
}

/**
 * The holding account the escrow's funding credited: the settlement takes the money back out of
 * it (escrows funded before holding was sharded sit in the unsharded account).
 */
async function holdingAccountOf(trx: Knex.Transaction, escrow: Escrow): Promise<LedgerAccount> {
  const holding = escrow.fundingPostingId ? await creditedAccountOf(trx, escrow.fundingPostingId, 'escrow_holding') : undefined;
  if (!holding) throw new Error(`escrow ${escrow.id} is settled but its funding credited no holding account`);
  return holding;
}
