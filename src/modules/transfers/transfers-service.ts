import type { Knex } from 'knex';
import { isValidPhoneNumber } from 'libphonenumber-js';
import type { Logger } from 'pino';
import { NotFoundError, ValidationError } from '../../errors';
import { toPage, type Page, type PageRequest } from '../../db/keyset';
import { withTransaction } from '../../db/transaction';
import { currencies, externalClearingAccount, minorToNumber, parseAmount, platformAccount, post, walletOf, type Currency } from '../ledger';
import type { Caller, IdempotencyClaim, WindowKey } from '../../contract';
import { PendingKey, type IdempotencyService, type ResourceStatusReader } from '../idempotency';
import { parseIdentifier } from './recipient';
import type { PayoutOutcome, PayoutRail, RailAdapter } from './rails';
import { TransfersRepository, type RecipientType, type Transfer, type TransferRail, type TransferStatus } from './transfers-repository';
import type { TransferRequest } from './transfer-decision';
import { TransferWindow, type TransferOutcome, type TransferSubmission } from './transfer-window';
import { readConnection } from '../../db/read-routing';

/** The contract's `note.maxLength`. */
const NOTE_MAX_CHARACTERS = 280;

export interface CreateTransferInput {
  amount: number | string;
  currency: string;
  recipientIdentifier: string;
  note?: string;
  rail?: TransferRail;
}

/** The API representation of a transfer (the contract's `Transfer`). */
export interface TransferView {
  id: string;
  status: TransferStatus;
  rail: TransferRail;
  amount: number;
  amount_minor: string;
  currency: string;
  recipient: { identifier: string; type: RecipientType; user_id?: string };
  note: string | null;
  failure_code: string | null;
  failure_reason: string | null;
  created_at: string;
  updated_at: string;
}

export type TransferPage = Page<TransferView>;

/**
 * How long a transfer handed to its rail is left to it: no instance hands it over again
 * before. A transfer still pending after that (its outcome never came: the
 * process that handed it over died, or the rail lost it) is handed over again by one instance.
 */
export const RAIL_HANDOVER_LEASE_SECONDS = 60;
/**
 * How long a transfer the rail accepted waits for its outcome before a sweep hands it over
 * again (a rail that lost it, or a sandbox rail that forgot it when its process died): long
 * enough that a rail reporting late is never called a second time for the transfer.
 */
export const RAIL_OUTCOME_WAIT_SECONDS = 15 * 60;
/**
 * A rail outcome whose write meets a lost database connection is written again at once on a
 * new connection, with backoff: up to this many retries (about 3 s in all), instead of waiting
 * for the next resume run, a minute later.
 */
export const OUTCOME_WRITE_RETRIES = 5;

/** The status a transfer's Idempotency-Key reports on a replay: the transfer's own, read now (src/services.ts wires it). */
export const transferStatusOf: ResourceStatusReader = (db, id) => new TransfersRepository(db).statusOf(id);

export interface TransferServiceDeps {
  knex: Knex;
  idempotency: IdempotencyService;
  rail: RailAdapter;
  logger?: Logger;
  /** See RAIL_HANDOVER_LEASE_SECONDS. */
  railLeaseSeconds?: number;
  /** See RAIL_OUTCOME_WAIT_SECONDS. */
  outcomeWaitSeconds?: number;
  /** Group commit of POST /transfers: the window (ms, <= 2) and the largest batch (<= 64). */
  batch?: { windowMs?: number; maxItems?: number };
}

/**
 * Transfers from a user's wallet. P2P moves wallet -> wallet in one transaction together
 * with the transfer row and the idempotency record. Bank and mobile money move wallet ->
 * the rail's transit account (platform, `rail_transit`) and stay `pending`; after commit the
 * payout is handed to the rail, whose outcome settles the transfer exactly once: transit ->
 * external clearing when completed, transit -> sender wallet (a reversal posting) when
 * failed. Money in flight always sits in the transit account.
 *
 * Decisions (documented in the contract):
 * - Unknown recipient (an e-mail or, with rail p2p, a phone that is no user; a disabled user): 404 `RecipientNotFound`.
 * - To oneself by p2p: 422 `SelfTransfer` (a mobile-money or bank payout to one's own number or account is allowed).
 * - The sender's or the recipient's wallet frozen: 422 `WalletFrozen` (`details.party`).
 * - The sender's user account locked (`users.status = 'locked'`): 422 `SenderLocked`.
 * - A locked (not disabled) recipient still receives: locking stops a user acting, not being paid.
 */
export class TransferService {
  private readonly knex: Knex;
  private readonly logger: Logger | undefined;
  private readonly dispatching = new Set<Promise<unknown>>();
  /** Transfers this instance handed to the rail whose outcome has not been written yet. */
  private readonly handedOver = new Set<string>();
  private readonly railLeaseSeconds: number;
  private readonly outcomeWaitSeconds: number;
  /** Transfers that arrive together are made in one statement (write_apply_batch), each with its own outcome. */
  readonly batcher: TransferWindow['batcher'];
  private readonly window: TransferWindow;

  constructor(private readonly deps: TransferServiceDeps) {
    this.knex = deps.knex;
    this.logger = deps.logger;
    this.railLeaseSeconds = deps.railLeaseSeconds ?? RAIL_HANDOVER_LEASE_SECONDS;
    this.outcomeWaitSeconds = deps.outcomeWaitSeconds ?? RAIL_OUTCOME_WAIT_SECONDS;
    this.window = new TransferWindow(this.knex, this.logger, deps.batch);
    this.batcher = this.window.batcher;
    deps.rail.onOutcome(async (transferId, outcome) => {
      await this.settle(transferId, outcome);
      this.handedOver.delete(transferId);
    });
  }

  /**
   * POST /transfers, on the one write path: `key` is the Idempotency-Key the pipeline hands over
   * (a trusted caller, a test or a job, gives the checked claim, made into the same key). The
   * caller's session was checked by the authentication, as for every operation.
   */
  async create(caller: Pick<Caller, 'userId'>, key: WindowKey | Pick<IdempotencyClaim, 'operation' | 'key' | 'requestHash'>, input: CreateTransferInput): Promise<TransferView> {
    const { userId } = caller;
    // Checks of the request alone come first: a 400 never touches the key.
    const currency = await currencies.require(this.knex, input.currency, 'body.currency');
    const amountMinor = parseAmount(input.amount, currency.exponent, { field: 'body.amount' });
    const note = input.note === undefined || input.note.trim() === '' ? null : input.note;
    // Characters, as the contract's maxLength and the database's length() count them (not UTF-16 units).
    if (note !== null && [...note].length > NOTE_MAX_CHARACTERS) {
      throw ValidationError.field('body.note', `note is at most ${NOTE_MAX_CHARACTERS} characters.`);
    }
    const identifier = parseIdentifier(input.recipientIdentifier, input.rail);
    const request: TransferRequest = {
      userId,
      currency: currency.code,
      amountMinor,
      note,
      identifier,
      rail: input.rail ?? null,
      phoneValid: identifier.kind === 'phone' && input.rail === undefined ? isValidPhoneNumber(identifier.value) : true,
    };
    // Everything else happens once the key is this request's (claimed by the window's
    // statement): a replay of a processed key answers 409 with the transfer it produced even
    // when the same request would now be refused, and a refusal rolls back without consuming it.
    const submission: TransferSubmission = {
      request,
      key: this.keyOf(userId, key),
    };
    const outcome: TransferOutcome = await this.window.submit(submission);
    if ('error' in outcome) throw outcome.error;
    const view = toView(outcome.transfer, currency);
    if (view.status === 'pending') {
      // After commit, outside the request's critical path: a slow rail never holds a lock.
      const dispatch = this.dispatch(view.id).finally(() => this.dispatching.delete(dispatch));
      this.dispatching.add(dispatch);
    }
    return view;
  }

  /** The pipeline's key, or the same key made from a trusted caller's checked claim. */
  private keyOf(userId: string, key: WindowKey | Pick<IdempotencyClaim, 'operation' | 'key' | 'requestHash'>): PendingKey {
    if (key instanceof PendingKey) return key;
    if (!('operation' in key)) throw new TypeError('a transfer needs the Idempotency-Key the pipeline hands over');
    return this.deps.idempotency.pendingKey({ userId, operation: key.operation, key: key.key, requestHash: key.requestHash }, 200);
  }

  /** GET /transfers/{transferId}: a transfer the caller sent or received. */
  async get(caller: Pick<Caller, 'userId'>, id: string): Promise<TransferView> {
    const transfer = await new TransfersRepository(this.knex).findOwn(caller.userId, id);
    if (!transfer) throw new NotFoundError('No transfer of yours has this id.');
    return toTransferView(this.knex, transfer);
  }

  /** GET /transfers: the caller's transfers, newest first. */
  async list(caller: Pick<Caller, 'userId'>, request: PageRequest): Promise<TransferPage> {
    const db = readConnection(this.knex);
    const rows = await new TransfersRepository(db).page(caller.userId, request);
    const page = toPage(rows, request.limit);
    return { ...page, data: await Promise.all(page.data.map((transfer) => toTransferView(db, transfer))) };
  }

  /**
   * Applies a rail's outcome to a pending transfer, exactly once: a second report, or a
   * report for a transfer that is not pending, changes nothing. Returns the transfer. A write
   * that meets a lost connection (a terminated backend, a failover) is retried at once on a
   * new connection with backoff: the transaction re-reads the transfer under its lock, so a
   * retry after a COMMIT that did go through changes nothing.
   */
  async settle(transferId: string, outcome: PayoutOutcome): Promise<Transfer | undefined> {
    return withTransaction(this.knex, async (trx) => {
      const transfers = new TransfersRepository(trx);
      const transfer = await transfers.lockById(transferId);
      if (!transfer || transfer.status !== 'pending') return transfer;
      const transit = await platformAccount(trx, 'rail_transit', transfer.currency, transfer.rail);
      if (outcome.status === 'completed') {
        const clearing = await externalClearingAccount(trx, transfer.currency);
        const posting = await post(trx, {
          kind: 'transfer.settlement',
          reference: transfer.id,
          metadata: { transfer_id: transfer.id, rail: transfer.rail, rail_reference: outcome.railReference },
          entries: [
            { accountId: transit.id, amountMinor: -transfer.amountMinor },
            { accountId: clearing.id, amountMinor: transfer.amountMinor },
          ],
        });
        return transfers.markSettled(transfer.id, { status: 'completed', postingId: posting.id, railReference: outcome.railReference });
      }
      const wallet = await walletOf(trx, transfer.senderUserId, transfer.currency);
      const posting = await post(
        trx,
        {
          kind: 'transfer.reversal',
          reference: transfer.id,
          reversesPostingId: transfer.postingId,
          metadata: { transfer_id: transfer.id, rail: transfer.rail, failure_code: outcome.code },
          entries: [
            { accountId: transit.id, amountMinor: -transfer.amountMinor },
            { accountId: wallet.id, amountMinor: transfer.amountMinor },
          ],
        },
        { allowFrozen: true },
      );
      return transfers.markSettled(transfer.id, {
        status: 'failed',
        postingId: posting.id,
        railReference: outcome.railReference,
        failureCode: outcome.code,
        failureReason: outcome.reason,
      });
    }, { retries: OUTCOME_WRITE_RETRIES, retryOnConnectionLoss: true });
  }

  /** Resolves once every payout handed off so far reached its rail (tests, shutdown). */
  async whenDispatched(): Promise<void> {
    while (this.dispatching.size > 0) await Promise.all([...this.dispatching]);
  }

  /**
   * Hands pending transfers to their rail again (at start-up and then every minute): those no
   * instance holds a hand-over lease on, claimed with FOR UPDATE SKIP LOCKED, so instances
   * sweeping at once never hand one transfer over twice. Returns how many this call handed over.
   */
  async resumePending(limit = 1000): Promise<number> {
    const transfers = new TransfersRepository(this.knex);
    let handed = 0;
    // One claim per hand-over, taken just before it: a lease claimed for a whole batch could
    // end while the batch's first hand-overs are slow, and another instance would then hand
    // the batch's tail over a second time.
    for (let claimedSoFar = 0; claimedSoFar < limit; claimedSoFar += 1) {
      const [transfer] = await transfers.claimForHandOver(1, this.railLeaseSeconds);
      if (!transfer) break;
      if (await this.dispatch(transfer.id, transfer)) handed += 1;
    }
    return handed;
  }

  /**
   * Shutdown: the transfers this instance handed over whose outcome has not come are given
   * back (their leases end now), so the next instance's sweep hands them over at once. (The
   * sandbox rail forgets its schedule when it stops; a real rail reports anyway, and a second
   * hand-over is idempotent on the transfer id.) A process that dies leaves them to the lease.
   */
  async releaseHandOvers(): Promise<void> {
    const ids = [...this.handedOver];
    this.handedOver.clear();
    await new TransfersRepository(this.knex).releaseHandOver(ids);
  }

  /** Hands one transfer to its rail if this instance claims it (or already claimed it); true when handed over. */
  private async dispatch(transferId: string, claimed?: Transfer): Promise<boolean> {
    const transfers = new TransfersRepository(this.knex);
    let transfer = claimed;
    try {
      transfer ??= await transfers.claimOneForHandOver(transferId, this.railLeaseSeconds);
      if (!transfer) return false;
      this.handedOver.add(transfer.id);
      const { railReference } = await this.deps.rail.submit({
        transferId: transfer.id,
        rail: transfer.rail as PayoutRail,
        currency: transfer.currency,
        amountMinor: transfer.amountMinor,
        recipient: transfer.recipientIdentifier,
      });
      await transfers.markSubmitted(transfer.id, railReference, this.outcomeWaitSeconds);
      return true;
    } catch (error) {
      // The transfer stays pending (its money in the transit account) and keeps its lease: the
      // first sweep after the lease ends retries it, so a failing rail is tried once per lease.
      this.logger?.error({ err: error, transferId }, 'could not hand a transfer to its rail');
      return false;
    }
  }
}

export async function toTransferView(db: Knex | Knex.Transaction, transfer: Transfer): Promise<TransferView> {
  return toView(transfer, await currencies.require(db, transfer.currency));
}

function toView(transfer: Transfer, currency: Currency): TransferView {
  const recipient: TransferView['recipient'] = { identifier: transfer.recipientIdentifier, type: transfer.recipientType };
  if (transfer.recipientUserId) recipient.user_id = transfer.recipientUserId;
  return {
    id: transfer.id,
    status: transfer.status,
    rail: transfer.rail,
    amount: minorToNumber(transfer.amountMinor, currency.exponent),
    amount_minor: transfer.amountMinor.toString(),
    currency: transfer.currency,
    recipient,
    note: transfer.note,
    failure_code: transfer.failureCode,
    failure_reason: transfer.failureReason,
    created_at: transfer.createdAt.toISOString(),
    updated_at: transfer.updatedAt.toISOString(),
  };
}
