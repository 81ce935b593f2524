import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../clock';
import { toPage, type Page, type PageRequest } from '../../db/keyset';
import { withTransaction } from '../../db/transaction';
import { readConnection } from '../../db/read-routing';
import { currencies, parseAmount } from '../ledger';
import { applyDecision, isLedgerRefusal } from '../writes';
import type { ResourceStatusReader } from '../idempotency';
import type { RailInstructionService } from '../rail-instructions';
import { verifyCallback, type CallbackHeaders } from './callback-signature';
import type { CollectionOutcome, MobileMoneyProvider, MobileMoneyRail } from './mobile-money-rail';
import { CallbackReplayedError, TopUpNotFoundError, WalletNotFoundError } from './top-up-errors';
import { presentTopUp, toInsert, TopUpRepository, type LockedTopUp, type TopUpView } from './top-up-repository';
import { settlement, topUpResource, type TopUp } from './top-up-settlement';

export interface CreateTopUpInput {
  amount: number | string;
  method: 'mobile_money';
  provider: MobileMoneyProvider;
  msisdn: string;
}

export interface TopUpServiceDeps {
  knex: Knex;
  rail: MobileMoneyRail;
  /**
   * Where the rail's instructions are delivered from: a top-up's collection request (recorded
   * with the top-up) and a reversed top-up's payment back (recorded with the reversal), each
   * retried until the rail takes it.
   */
  instructions: RailInstructionService;
  /** MOBILE_MONEY_CALLBACK_SECRET: the key the rail signs its callbacks with. */
  callbackSecret: string;
  clock: Clock;
  logger?: Pick<Logger, 'error' | 'warn'>;
}

/** How long a top-up may stay pending before the job asks the rail about it. */
export const PENDING_CHECK_AFTER_MS = 10 * 60_000;
/** How long a callback's webhook-id is kept (its timestamp is refused after five minutes). */
const CALLBACK_IDS_KEPT_MS = 24 * 3_600_000;

/** The status a top-up's Idempotency-Key reports on a replay: the top-up's own, read now. */
export const topUpStatusOf: ResourceStatusReader = (db, id) => new TopUpRepository(db).statusOf(id);

/**
 * Top-ups of a wallet by mobile money. A request records the top-up `pending` (on the one write
 * path: its key claimed in the read of the wallet, the row inserted by write_apply, its
 * collection request recorded with it) and, once committed, asks the rail to collect (the job
 * asks again until the rail takes it, so a process dying after the commit loses no request). The rail's outcome (a signed callback, the job's
 * question, or the sandbox's test helpers) settles it, once, by its provider reference: the
 * row locked, the decision applied (top-up-settlement.ts). A credit the ledger refuses (a
 * frozen wallet, a limit) is applied as nothing: the top-up is `reversed` instead and the rail
 * pays the payer back (an instruction recorded with the reversal, delivered until the rail takes it), so a callback never fails for it and the wallet is never credited in part.
 */
export class TopUpService {
  private readonly knex: Knex;

  constructor(private readonly deps: TopUpServiceDeps) {
    this.knex = deps.knex;
  }

  /** POST /wallets/{walletId}/top-ups, in the pipeline's transaction; `requestCollection` is for after its commit. */
  async create(trx: Knex.Transaction, userId: string, walletId: string, input: CreateTopUpInput): Promise<{ view: TopUpView; topUp: TopUp }> {
    const wallet = await new TopUpRepository(trx).readWallet(trx, walletId, userId);
    if (!wallet) throw new WalletNotFoundError();
    const exponent = Number(wallet.exponent);
    const amountMinor = parseAmount(input.amount, exponent, { field: 'body.amount' });
    const now = this.deps.clock();
    const topUp: TopUp = {
      id: crypto.randomUUID(),
      userId,
      walletId: wallet.wallet_id,
      currency: wallet.currency,
      amountMinor,
      method: input.method,
      provider: input.provider,
      msisdn: input.msisdn,
      status: 'pending',
      // The collection's name at the rail, chosen by the platform (as MoMo's X-Reference-Id).
      providerReference: crypto.randomUUID(),
      failureCode: null,
      postingId: null,
      settledAt: null,
      createdAt: now,
      updatedAt: now,
    };
    await applyDecision(trx, { changes: [{ table: 'top_ups', op: 'insert', id: topUp.id, set: toInsert(topUp) }], answer: { resource: topUpResource(topUp), status: 202 } });
    return { view: presentTopUp(topUp, exponent), topUp };
  }

  /** Right after the top-up's commit: its collection request (recorded with it) is attempted at once; the job retries it. */
  async requestCollection(topUpId: string): Promise<void> {
    await this.deps.instructions.deliverFirst('top_up.request', topUpId);
  }

  /** The delivery of a top-up's collection request: idempotent at the rail on its provider reference; nothing once it is settled. */
  async askPayer(topUpId: string): Promise<void> {
    const topUp = await new TopUpRepository(this.knex).findById(topUpId);
    if (!topUp || topUp.status !== 'pending') return;
    await this.deps.rail.requestToPay({ providerReference: topUp.providerReference, provider: topUp.provider, msisdn: topUp.msisdn, currency: topUp.currency, amountMinor: topUp.amountMinor });
  }

  /** GET /wallets/{walletId}/top-ups/{topUpId}: the wallet's owner only (404 otherwise). */
  async get(userId: string, walletId: string, topUpId: string): Promise<TopUpView> {
    const topUp = await new TopUpRepository(this.knex).find(walletId, topUpId);
    if (!topUp || topUp.userId !== userId) throw new TopUpNotFoundError();
    return this.present(this.knex, topUp);
  }

  /** GET /wallets/{walletId}/top-ups: the wallet's top-ups, newest first. */
  async list(userId: string, walletId: string, request: PageRequest): Promise<Page<TopUpView>> {
    const db = readConnection(this.knex);
    const owner = (await db('ledger_accounts').where({ id: walletId, owner_type: 'user', owner_id: userId, kind: 'wallet' }).first('currency')) as { currency: string } | undefined;
    if (!owner) throw new WalletNotFoundError();
    const { exponent } = await currencies.require(db, owner.currency);
    const page = toPage(await new TopUpRepository(db).page(walletId, request), request.limit);
    return { ...page, data: page.data.map((topUp) => presentTopUp(topUp, exponent)) };
  }

  /**
   * POST /rails/mobile-money/callbacks: the signature checked against the raw body (401), the
   * webhook-id recorded (a replay: 409), then the settlement by provider reference (an unknown
   * one: 404). Answers the top-up's status after it.
   */
  async receiveCallback(headers: CallbackHeaders, rawBody: string, body: { provider_reference: string } & ({ status: 'succeeded' } | { status: 'failed'; failure_code?: string })): Promise<TopUp> {
    const webhookId = verifyCallback(this.deps.callbackSecret, headers, rawBody, this.deps.clock().getTime());
    const outcome: CollectionOutcome = body.status === 'succeeded' ? { status: 'succeeded' } : { status: 'failed', failureCode: body.failure_code ?? 'declined' };
    return this.settle(body.provider_reference, outcome, webhookId);
  }

  /**
   * Settles the top-up of `providerReference` with the rail's outcome, once: a top-up already
   * settled is answered as it is (callbacks arrive twice, the job may ask after a callback).
   */
  async settle(providerReference: string, outcome: CollectionOutcome, callbackId?: string): Promise<TopUp> {
    let reversed: TopUp | undefined;
    const settled = await withTransaction(this.knex, async (trx) => {
      const repository = new TopUpRepository(trx);
      const now = this.deps.clock();
      if (callbackId !== undefined && !(await repository.recordCallback(trx, callbackId, now))) throw new CallbackReplayedError();
      const locked = await repository.lockByReference(trx, providerReference);
      if (!locked) throw new TopUpNotFoundError('No top-up has this provider_reference.');
      if (locked.topUp.status !== 'pending') return locked.topUp;
      const result = await this.credit(trx, locked, outcome, now);
      if (result.status === 'reversed') reversed = result;
      return result;
    });
    if (reversed) await this.giveBack(reversed);
    return settled;
  }

  /** The settlement's decision applied; a credit the ledger refuses becomes the reversal (under a savepoint, so the transaction stays usable). */
  private async credit(trx: Knex.Transaction, locked: LockedTopUp, outcome: CollectionOutcome, now: Date): Promise<TopUp> {
    const present = (topUp: TopUp) => presentTopUp(topUp, locked.exponent);
    const decided = settlement(locked.topUp, outcome, now, present);
    try {
      const postingIds = await trx.transaction((savepoint) => applyDecision(savepoint, decided.decision));
      return { ...decided.after, postingId: postingIds[0] ?? null };
    } catch (error) {
      if (!isLedgerRefusal(error)) throw error;
      const reversal = settlement(locked.topUp, { status: 'reversed', refusal: (error as { code: string }).code }, now, present);
      await applyDecision(trx, reversal.decision);
      return reversal.after;
    }
  }

  /** Right after the reversal's commit: the payment back (recorded with it) is attempted at once; the job retries it. */
  private async giveBack(topUp: TopUp): Promise<void> {
    await this.deps.instructions.deliverFirst('top_up.give_back', topUp.id);
  }

  /** The delivery of a reversed top-up's payment back: idempotent at the rail on its provider reference. */
  async giveBackToPayer(topUpId: string): Promise<void> {
    const topUp = await new TopUpRepository(this.knex).findById(topUpId);
    if (!topUp || topUp.status !== 'reversed') return;
    await this.deps.rail.giveBack(topUp.providerReference);
  }

  /** The sandbox's payer approves or declines (test helpers): the outcome the rail reports, settled as a callback would. */
  async decideInSandbox(topUpId: string, outcome: CollectionOutcome, decide: (providerReference: string, outcome: CollectionOutcome) => void): Promise<TopUpView> {
    const topUp = await new TopUpRepository(this.knex).findById(topUpId);
    if (!topUp) throw new TopUpNotFoundError('No top-up has this id.');
    decide(topUp.providerReference, outcome);
    return this.present(this.knex, await this.settle(topUp.providerReference, outcome));
  }

  /**
   * The job: asks the rail about top-ups pending for more than ten minutes and settles those it
   * has an outcome for; forgets old callback ids. Returns how many it settled.
   */
  async checkPending(options: { batchSize: number }): Promise<number> {
    const now = this.deps.clock().getTime();
    const repository = new TopUpRepository(this.knex);
    await repository.forgetCallbacks(new Date(now - CALLBACK_IDS_KEPT_MS));
    let settled = 0;
    for (const reference of await repository.pendingSince(new Date(now - PENDING_CHECK_AFTER_MS), options.batchSize)) {
      try {
        const status = await this.deps.rail.statusOf(reference);
        if (status.status === 'pending') continue;
        await this.settle(reference, status);
        settled += 1;
      } catch (error) {
        this.deps.logger?.warn({ err: error, providerReference: reference }, 'could not settle a pending top-up from the rail; it is asked again later');
      }
    }
    return settled;
  }

  private async present(db: Knex, topUp: TopUp): Promise<TopUpView> {
    const { exponent } = await currencies.require(db, topUp.currency);
    return presentTopUp(topUp, exponent);
  }
}
