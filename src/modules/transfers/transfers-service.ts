import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { isValidPhoneNumber } from 'libphonenumber-js';
import type { Logger } from 'pino';
import { DomainError, NotFoundError, UnprocessableError, ValidationError } from '../../errors';
import { withTransaction } from '../../db/transaction';
import {
  currencies,
  externalClearingAccount,
  findWallets,
  minorToNumber,
  parseAmount,
  platformAccount,
  post,
  walletOf,
  formatMinor,
  type LedgerAccount,
} from '../ledger';
import { validateIdempotencyKey, type IdempotencyService } from '../idempotency';
import { parseIdentifier, type ParsedIdentifier } from './recipient';
import type { PayoutOutcome, PayoutRail, RailAdapter } from './rails';
import { transfersRepository, type RecipientType, type Transfer, type TransferRail, type TransferStatus, type UserSummary } from './transfers-repository';

export const CREATE_TRANSFER_OPERATION = 'createTransfer';
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

export interface TransferPage {
  object: 'list';
  data: TransferView[];
  has_more: boolean;
  next_cursor: string | null;
}

interface ResolvedRecipient {
  rail: TransferRail;
  type: RecipientType;
  identifier: string;
  userId: string | null;
}

export interface TransferServiceDeps {
  knex: Knex;
  idempotency: IdempotencyService;
  rail: RailAdapter;
  logger?: Logger;
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
  private readonly dispatching = new Set<Promise<void>>();

  constructor(private readonly deps: TransferServiceDeps) {
    this.knex = deps.knex;
    this.logger = deps.logger;
    deps.rail.onOutcome(async (transferId, outcome) => {
      await this.settle(transferId, outcome);
    });
    deps.idempotency.registerResourceStatus('transfer', (db, id) => transfersRepository.statusOf(db, id));
  }

  async create(userId: string, idempotencyKey: string, input: CreateTransferInput): Promise<TransferView> {
    // Checks of the request alone come first: a 400 never touches the key.
    const key = validateIdempotencyKey(idempotencyKey);
    const currency = await currencies.require(this.knex, input.currency, 'body.currency');
    const amountMinor = parseAmount(input.amount, currency.exponent, { field: 'body.amount' });
    const note = input.note === undefined || input.note.trim() === '' ? null : input.note;
    // Characters, as the contract's maxLength and the database's length() count them (not UTF-16 units).
    if (note !== null && [...note].length > NOTE_MAX_CHARACTERS) {
      throw ValidationError.field('body.note', `note is at most ${NOTE_MAX_CHARACTERS} characters.`);
    }
    const identifier = parseIdentifier(input.recipientIdentifier, input.rail);

    // Checks that depend on the state of the world (recipient, balance, frozen wallets) run
    // after the key is claimed: a replay of a processed key answers 409 with the transfer it
    // produced even when the same request would now be refused (the balance it spent is gone).
    // A refusal here rolls back and releases the claim, so the key is not consumed.
    const view = await this.deps.idempotency.execute(
      { userId, operation: CREATE_TRANSFER_OPERATION, key, request: { body: input } },
      async (trx) => {
        const recipient = await this.resolveRecipient(trx, userId, identifier, input.rail);
        const wallets = await this.precheck(trx, userId, recipient, currency.code, amountMinor, currency.exponent);
        const transfer = await this.record(trx, userId, recipient, wallets, currency.code, amountMinor, note);
        const dto = await toTransferView(trx, transfer);
        return {
          result: dto,
          responseStatus: 200,
          responseBody: dto,
          resource: { type: 'transfer', id: transfer.id, status: transfer.status, location: `/api/transfers/${transfer.id}` },
        };
      },
    );
    if (view.status === 'pending') {
      // After commit, outside the request's critical path: a slow rail never holds a lock.
      const dispatch = this.dispatch(view.id).finally(() => this.dispatching.delete(dispatch));
      this.dispatching.add(dispatch);
    }
    return view;
  }

  async get(userId: string, id: string): Promise<TransferView> {
    const transfer = await transfersRepository.findOwn(this.knex, userId, id);
    if (!transfer) throw new NotFoundError('No transfer of yours has this id.');
    return toTransferView(this.knex, transfer);
  }

  async list(userId: string, options: { limit: number; startingAfter?: string }): Promise<TransferPage> {
    if (options.startingAfter && !(await transfersRepository.findOwn(this.knex, userId, options.startingAfter))) {
      throw ValidationError.field('query.starting_after', 'starting_after must be the id of one of your transfers (a next_cursor).');
    }
    const rows = await transfersRepository.listBySender(this.knex, userId, options.limit + 1, options.startingAfter);
    const hasMore = rows.length > options.limit;
    const page = hasMore ? rows.slice(0, options.limit) : rows;
    const data = await Promise.all(page.map((transfer) => toTransferView(this.knex, transfer)));
    return { object: 'list', data, has_more: hasMore, next_cursor: hasMore ? (data[data.length - 1]?.id ?? null) : null };
  }

  /**
   * Applies a rail's outcome to a pending transfer, exactly once: a second report, or a
   * report for a transfer that is not pending, changes nothing. Returns the transfer.
   */
  async settle(transferId: string, outcome: PayoutOutcome): Promise<Transfer | undefined> {
    return withTransaction(this.knex, async (trx) => {
      const transfer = await transfersRepository.lockById(trx, transferId);
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
        return transfersRepository.markSettled(trx, transfer.id, { status: 'completed', postingId: posting.id, railReference: outcome.railReference });
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
      return transfersRepository.markSettled(trx, transfer.id, {
        status: 'failed',
        postingId: posting.id,
        railReference: outcome.railReference,
        failureCode: outcome.code,
        failureReason: outcome.reason,
      });
    });
  }

  /** Resolves once every payout handed off so far reached its rail (tests, shutdown). */
  async whenDispatched(): Promise<void> {
    while (this.dispatching.size > 0) await Promise.all([...this.dispatching]);
  }

  /** Hands every pending transfer to its rail again (at start-up: a rail's submit is idempotent). */
  async resumePending(limit = 1000): Promise<number> {
    const ids = await transfersRepository.pendingIds(this.knex, limit);
    for (const id of ids) await this.dispatch(id);
    return ids.length;
  }

  private async dispatch(transferId: string): Promise<void> {
    try {
      const transfer = await transfersRepository.findById(this.knex, transferId);
      if (!transfer || transfer.status !== 'pending' || transfer.rail === 'p2p') return;
      const { railReference } = await this.deps.rail.submit({
        transferId: transfer.id,
        rail: transfer.rail as PayoutRail,
        currency: transfer.currency,
        amountMinor: transfer.amountMinor,
        recipient: transfer.recipientIdentifier,
      });
      await transfersRepository.markSubmitted(this.knex, transfer.id, railReference);
    } catch (error) {
      // The transfer stays pending (its money in the transit account); resumePending retries.
      this.logger?.error({ err: error, transferId }, 'could not hand a transfer to its rail');
    }
  }

  /** Finds the parties of a parsed identifier (one query): the rail, and who receives. */
  private async resolveRecipient(
    db: Knex.Transaction,
    userId: string,
    parsed: ParsedIdentifier,
    rail: TransferRail | undefined,
  ): Promise<ResolvedRecipient & { sender?: UserSummary }> {
    const byUser = parsed.kind === 'email' ? { email: parsed.value } : parsed.kind === 'phone' && rail !== 'mobile_money' ? { phone: parsed.value } : null;
    const { sender, recipient: user } = await transfersRepository.findParties(db, userId, byUser);
    if (parsed.kind === 'iban') return { rail: 'bank', type: 'iban', identifier: parsed.value, userId: null, sender };
    if (parsed.kind === 'phone' && rail === 'mobile_money') return { rail: 'mobile_money', type: 'msisdn', identifier: parsed.value, userId: null, sender };
    if (user && user.status !== 'disabled') {
      if (user.id === userId) throw new UnprocessableError('SelfTransfer', 'You cannot send money to yourself.');
      return { rail: 'p2p', type: 'user', identifier: parsed.value, userId: user.id, sender };
    }
    if (parsed.kind === 'phone' && rail === undefined) {
      if (!isValidPhoneNumber(parsed.value)) {
        throw ValidationError.field('body.recipientIdentifier', 'recipientIdentifier is not a valid telephone number for its country.');
      }
      return { rail: 'mobile_money', type: 'msisdn', identifier: parsed.value, userId: null, sender };
    }
    throw new NotFoundError('No platform user has this e-mail address or telephone number.', 'RecipientNotFound');
  }

  /**
   * Checks that need no lock, with clear errors before any row is locked (the ledger repeats
   * the balance and frozen checks under the lock). Returns the wallets that exist.
   */
  private async precheck(
    db: Knex.Transaction,
    userId: string,
    recipient: ResolvedRecipient & { sender?: UserSummary },
    currency: string,
    amountMinor: bigint,
    exponent: number,
  ): Promise<Map<string, LedgerAccount>> {
    const sender = recipient.sender;
    if (!sender || sender.status === 'disabled') throw new NotFoundError('Your user account no longer exists.', 'NotFound');
    if (sender.status === 'locked') throw new UnprocessableError('SenderLocked', 'Your account is locked: it cannot send money. Contact support.');
    const wallets = await findWallets(db, recipient.userId ? [userId, recipient.userId] : [userId], currency);
    const wallet = wallets.get(userId);
    if (wallet?.status === 'frozen') throw walletFrozen('sender');
    const available = wallet?.balanceMinor ?? 0n;
    if (available < amountMinor) {
      throw new UnprocessableError('InsufficientFunds', `Insufficient funds: your ${currency} wallet does not cover this transfer.`, {
        currency,
        available: formatMinor(available, exponent),
        required: formatMinor(amountMinor, exponent),
      });
    }
    if (recipient.userId && wallets.get(recipient.userId)?.status === 'frozen') throw walletFrozen('recipient');
    return wallets;
  }

  /** The effect: one posting and the transfer row, inside the idempotency transaction. */
  private async record(
    trx: Knex.Transaction,
    userId: string,
    recipient: ResolvedRecipient,
    known: Map<string, LedgerAccount>,
    currency: string,
    amountMinor: bigint,
    note: string | null,
  ): Promise<Transfer> {
    const id = crypto.randomUUID();
    // Wallets never disappear: the ones the precheck found are used as they are.
    const from = known.get(userId) ?? (await walletOf(trx, userId, currency));
    const to: LedgerAccount = recipient.userId
      ? (known.get(recipient.userId) ?? (await walletOf(trx, recipient.userId, currency)))
      : await platformAccount(trx, 'rail_transit', currency, recipient.rail);
    let postingId: string;
    try {
      const posting = await post(trx, {
        kind: `transfer.${recipient.rail}`,
        reference: id,
        metadata: { transfer_id: id, sender_user_id: userId, rail: recipient.rail },
        entries: [
          { accountId: from.id, amountMinor: -amountMinor },
          { accountId: to.id, amountMinor },
        ],
      });
      postingId = posting.id;
    } catch (error) {
      if (error instanceof DomainError && error.code === 'AccountFrozen') {
        throw walletFrozen((error.details as { account_id?: string } | undefined)?.account_id === from.id ? 'sender' : 'recipient');
      }
      if (error instanceof DomainError && error.code === 'InsufficientFunds') {
        // Same error, without the internal ledger account id.
        const { available, required } = error.details as { available: string; required: string };
        throw new UnprocessableError('InsufficientFunds', error.message, { currency, available, required });
      }
      throw error;
    }
    return transfersRepository.insert(trx, {
      id,
      senderUserId: userId,
      rail: recipient.rail,
      status: recipient.rail === 'p2p' ? 'completed' : 'pending',
      currency,
      amountMinor,
      recipientType: recipient.type,
      recipientIdentifier: recipient.identifier,
      recipientUserId: recipient.userId,
      note,
      postingId,
    });
  }
}

function walletFrozen(party: 'sender' | 'recipient'): UnprocessableError {
  return new UnprocessableError(
    'WalletFrozen',
    party === 'sender' ? 'Your wallet in this currency is frozen: it cannot send money.' : "The recipient's wallet in this currency is frozen: it cannot receive money.",
    { party },
  );
}

export async function toTransferView(db: Knex | Knex.Transaction, transfer: Transfer): Promise<TransferView> {
  const currency = await currencies.require(db, transfer.currency);
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
