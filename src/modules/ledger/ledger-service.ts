import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { ConflictError, DomainError, UnprocessableError } from '../../errors';
import { isUniqueViolation, withTransaction } from '../../db/transaction';
import { currencies } from './currency-repository';
import { LedgerRepository } from './ledger-repository';
import { limitRefusal } from '../limits';
import { MAX_MINOR, formatMinor } from './money';
import type { AccountIdentity, AccountStatus, InvariantViolation, LedgerAccount, Posting, PostingInput } from './ledger-types';

/**
 * THE LEDGER: the only code that moves money. Stable API for every other module.
 *
 * All functions take the caller's transaction (`trx`): a service opens one transaction per
 * use case (see `withTransaction` in src/db/transaction.ts, which retries deadlocks and
 * serialization failures) and passes it here, so a posting commits or rolls back together
 * with the rows that caused it (a transfer, an escrow, an idempotency record...).
 *
 * - `post(trx, {kind, reference, metadata?, reversesPostingId?, entries: [{accountId, amountMinor}]}, options?)`
 *   Records one balanced double-entry posting. `amountMinor` is a signed bigint in minor units
 *   (negative debits, positive credits); entries must sum to zero per currency and there must
 *   be at least two. Locks every touched account (SELECT ... FOR UPDATE, in id order: no
 *   deadlocks between postings), refuses with 422 `InsufficientFunds` when an account that
 *   may not go negative would, with 409 `AccountFrozen` when a touched account is frozen
 *   (unless `options.allowFrozen`, meant for reversals that return money), with 409
 *   `DuplicatePosting` when (kind, reference) was already posted. One round trip: the
 *   database function `ledger_post` (the only writer of postings, entries and balances)
 *   locks, checks once per posting, moves the balances and writes the entries (stored, and
 *   returned, in account id order). A refusal writes nothing and leaves the transaction usable.
 * - `ensureAccount(trx, {ownerType, ownerId, currency, kind, externalRef?})`: get-or-create,
 *   race-safe (INSERT ... ON CONFLICT DO NOTHING, then SELECT).
 * - `ensureAccounts(trx, identities)`: ensureAccount for several, the existing ones in one query.
 * - `walletOf(trx, userId, currency)`: the user's wallet in that currency, created on first use.
 * - `findWallets(db, userIds, currency)`: existing wallets of several users, one query.
 * - `walletsOf(trx, userIds, currency)`: the wallets of several users, created on first use.
 * - `externalClearingAccount(trx, currency)`: the platform's account for money entering or
 *   leaving the platform (the only account allowed to go negative).
 * - `platformAccount(trx, kind, currency, externalRef?)`: other platform accounts (rail_transit, fees).
 * - `shardedPlatformAccount(trx, kind, currency, reference)`: one of the PLATFORM_SHARDS accounts
 *   that together hold a hot platform balance (escrow holding, fees), picked by `reference`.
 * - `creditedAccountOf(trx, postingId, kind)`: the account of that kind a posting credited (to
 *   take money back out of the very account that received it).
 * - `fundWallet(trx, userId, currency, amountMinor, reference?)`: credits a wallet from the
 *   external clearing account (demo seed, test factories, sandbox top-ups).
 * - `reconcile(knex)`: the invariant violations of the whole ledger (empty when healthy).
 */

export interface PostOptions {
  /** Let the posting touch frozen accounts (reversals returning money to a frozen wallet). */
  allowFrozen?: boolean;
}

const PLATFORM_ALLOW_NEGATIVE = new Set(['external_clearing']);

export async function ensureAccount(trx: Knex.Transaction | Knex, identity: AccountIdentity): Promise<LedgerAccount> {
  if ((identity.ownerType === 'platform') !== (identity.ownerId === null)) {
    throw new TypeError('a platform account has no owner id; every other account has one');
  }
  await currencies.require(trx, identity.currency);
  const existing = await new LedgerRepository(trx).findAccount(identity);
  if (existing) return existing;
  const inserted = await new LedgerRepository(trx).insertAccountIfAbsent(identity, PLATFORM_ALLOW_NEGATIVE.has(identity.kind));
  if (inserted) return inserted;
  // Another transaction created it between our read and our insert (and has committed).
  const raced = await new LedgerRepository(trx).findAccount(identity);
  if (!raced) throw new Error(`ledger account ${JSON.stringify(identity)} vanished after a conflicting insert`);
  return raced;
}

/**
 * ensureAccount for several identities at once, answered in their order: the existing ones in
 * one statement (an escrow's settlement needs a wallet and a fee shard: one round trip, not
 * two); only an account used for the first time costs more (ensureAccount's insert).
 */
export async function ensureAccounts(trx: Knex.Transaction | Knex, identities: readonly AccountIdentity[]): Promise<LedgerAccount[]> {
  const found = await new LedgerRepository(trx).findAccounts(identities);
  const accounts: LedgerAccount[] = [];
  for (const [index, identity] of identities.entries()) accounts.push(found.get(index) ?? (await ensureAccount(trx, identity)));
  return accounts;
}

/** The identity of a user's wallet (see walletOf). */
export function walletIdentity(userId: string, currency: string): AccountIdentity {
  return { ownerType: 'user', ownerId: userId, currency, kind: 'wallet' };
}

/** The identity of the shard of a hot platform balance that `reference` picks (see shardedPlatformAccount). */
export function shardIdentity(kind: 'escrow_holding' | 'fees', currency: string, reference: string): AccountIdentity {
  return { ownerType: 'platform', ownerId: null, currency, kind, externalRef: platformShardOf(reference) };
}

export function walletOf(trx: Knex.Transaction | Knex, userId: string, currency: string): Promise<LedgerAccount> {
  return ensureAccount(trx, walletIdentity(userId, currency));
}

/** The identity of the platform's clearing account of a currency (see externalClearingAccount). */
export function clearingIdentity(currency: string): AccountIdentity {
  return { ownerType: 'platform', ownerId: null, currency, kind: 'external_clearing' };
}

export function externalClearingAccount(trx: Knex.Transaction | Knex, currency: string): Promise<LedgerAccount> {
  return ensureAccount(trx, clearingIdentity(currency));
}

export function platformAccount(
  trx: Knex.Transaction | Knex,
  kind: 'rail_transit' | 'fees' | 'external_clearing',
  currency: string,
  externalRef: string | null = null,
): Promise<LedgerAccount> {
  return ensureAccount(trx, { ownerType: 'platform', ownerId: null, currency, kind, externalRef });
}

/**
 * Every posting locks its accounts until commit, so one platform account per currency that every
 * escrow touches (the holding account, the fee account) serialises all of them: the benchmark
 * saw queues of 18 transactions on the holding row. The balance is therefore split over
 * PLATFORM_SHARDS accounts (external_ref `shard-N`); a reference (the escrow id) always picks
 * the same one, so money leaves the shard it entered and no shard goes negative. The platform's
 * holding is the sum over the shards. 256, not 16: at 32 connections the escrow benchmark's
 * `ledger_post` took 13-17 ms a call with 16 shards (waiting for shard rows), 2.2-2.6 ms with
 * 64 and 1.2 ms with 256 (0.4 ms uncontended). A settlement leaves the shard its funding
 * credited (creditedAccountOf), so changing the count never strands money.
 */
export const PLATFORM_SHARDS = 256;

/** The shard (`shard-0` .. `shard-255`) of a reference: stable, and spread evenly by SHA-256. */
export function platformShardOf(reference: string): string {
  const digest = crypto.createHash('sha256').update(reference).digest();
  return `shard-${digest.readUInt32BE(0) % PLATFORM_SHARDS}`;
}

export function shardedPlatformAccount(trx: Knex.Transaction | Knex, kind: 'escrow_holding' | 'fees', currency: string, reference: string): Promise<LedgerAccount> {
  return ensureAccount(trx, shardIdentity(kind, currency, reference));
}

/** The account of `kind` that the posting credited (one query); undefined when it credited none. */
export function creditedAccountOf(trx: Knex.Transaction | Knex, postingId: string, kind: LedgerAccount['kind']): Promise<LedgerAccount | undefined> {
  return new LedgerRepository(trx).findCreditedAccount(postingId, kind);
}

/**
 * The one error of each refusal of the ledger (ledger_post's answers): 409 AccountFrozen naming
 * the account; 422 InsufficientFunds with the account, the currency and the amounts (already
 * written in the currency's exponent); LimitExceeded: the payer's own (409 LimitExceeded) or a
 * payee's (409 RecipientCannotReceive), see limitRefusal. A use case names the wallets' parties (walletRefusal).
 */
export function ledgerRefusal(refusal: 'AccountFrozen', detail: { account_id: string; owner_id?: string | null }): ConflictError;
export function ledgerRefusal(refusal: 'InsufficientFunds', detail: { account_id: string; currency: string; available: string; required: string }): UnprocessableError;
export function ledgerRefusal(refusal: 'LimitExceeded', detail: unknown): ConflictError;
export function ledgerRefusal(refusal: 'AccountFrozen' | 'InsufficientFunds' | 'LimitExceeded', refused: unknown): DomainError {
  if (refusal === 'LimitExceeded') return limitRefusal(refused);
  const detail = refused as { account_id: string; owner_id?: string | null; currency?: string; available?: string; required?: string };
  if (refusal === 'AccountFrozen') {
    const frozen = new ConflictError('AccountFrozen', 'A ledger account of this operation is frozen: no money can move in or out of it.', { account_id: detail.account_id });
    // Whose account it is (walletRefusal names the party by it); not a detail the response shows.
    return Object.assign(frozen, { ownerId: detail.owner_id ?? null });
  }
  const { account_id: accountId, currency, available, required } = detail;
  return new UnprocessableError('InsufficientFunds', `Insufficient funds: the ${currency} balance does not cover this operation.`, {
    account_id: accountId,
    currency: currency as string,
    available: available as string,
    required: required as string,
  });
}

export async function post(trx: Knex.Transaction, input: PostingInput, options: PostOptions = {}): Promise<Posting> {
  if (!(trx as Knex.Transaction).isTransaction) throw new TypeError('ledger.post must run inside a transaction');
  if (input.entries.length < 2) throw new TypeError('a posting needs at least two entries');
  for (const entry of input.entries) {
    if (typeof entry.amountMinor !== 'bigint') throw new TypeError('entry amounts are bigint minor units');
    if (entry.amountMinor === 0n) throw new TypeError('an entry amount is never zero');
    if (entry.amountMinor > MAX_MINOR || -entry.amountMinor > MAX_MINOR) throw new TypeError('entry amount out of range');
  }
  let result;
  try {
    result = await new LedgerRepository(trx).post(
      {
        kind: input.kind,
        reference: input.reference,
        metadata: input.metadata ?? {},
        reversesPostingId: input.reversesPostingId ?? null,
        allowFrozen: options.allowFrozen ?? false,
      },
      input.entries,
    );
  } catch (error) {
    if (isUniqueViolation(error, 'postings_kind_reference_unique')) {
      throw new ConflictError('DuplicatePosting', `The ${input.kind} posting for ${input.reference} was already recorded.`);
    }
    // ledger_post's programming errors (unbalanced, unknown account): the caller's bug, not the client's.
    const code = (error as { code?: unknown }).code;
    if (code === 'LDG01' || code === 'LDG02' || code === 'LDG05') throw new TypeError((error as Error).message);
    throw error;
  }
  if (result.refusal === 'AccountFrozen') throw ledgerRefusal('AccountFrozen', { account_id: result.detail.account_id, owner_id: result.detail.owner_id });
  if (result.refusal === 'LimitExceeded') throw ledgerRefusal('LimitExceeded', result.detail);
  if (result.refusal === 'InsufficientFunds') {
    const { account_id: accountId, currency, available, required } = result.detail;
    const { exponent } = await currencies.require(trx, currency);
    throw ledgerRefusal('InsufficientFunds', { account_id: accountId, currency, available: formatMinor(BigInt(available), exponent), required: formatMinor(BigInt(required), exponent) });
  }
  const { posting, entries, balancesAfter } = result;
  return {
    id: posting.id,
    kind: posting.kind,
    reference: posting.reference,
    metadata: posting.metadata,
    reversesPostingId: posting.reverses_posting_id,
    createdAt: posting.created_at,
    entries,
    balancesAfter,
  };
}

/** Credits a user's wallet from the platform's external clearing account (money entering the platform). */
export async function fundWallet(
  trx: Knex.Transaction,
  userId: string,
  currency: string,
  amountMinor: bigint,
  reference: string = crypto.randomUUID(),
): Promise<Posting> {
  if (amountMinor <= 0n) throw new TypeError('a funding amount is positive');
  const wallet = await walletOf(trx, userId, currency);
  const clearing = await externalClearingAccount(trx, currency);
  return post(trx, {
    kind: 'wallet.funding',
    reference,
    metadata: { user_id: userId },
    entries: [
      { accountId: clearing.id, amountMinor: -amountMinor },
      { accountId: wallet.id, amountMinor },
    ],
  });
}

export function listAccounts(
  db: Knex | Knex.Transaction,
  filter: Parameters<LedgerRepository['listAccounts']>[0],
): Promise<LedgerAccount[]> {
  return new LedgerRepository(db).listAccounts(filter);
}

/** The existing wallets of several users in one currency, by user id, in one query (none are created). */
export async function findWallets(db: Knex | Knex.Transaction, userIds: string[], currency: string): Promise<Map<string, LedgerAccount>> {
  const found = await new LedgerRepository(db).findAccounts(userIds.map((userId) => walletIdentity(userId, currency)));
  return new Map([...found.values()].map((wallet) => [wallet.ownerId as string, wallet]));
}

/** The wallets of several users in one currency, by user id: ensureAccounts (existing ones in one statement, a missing one created). */
export async function walletsOf(trx: Knex.Transaction | Knex, userIds: readonly string[], currency: string): Promise<Map<string, LedgerAccount>> {
  const wallets = await ensureAccounts(trx, userIds.map((userId) => walletIdentity(userId, currency)));
  return new Map(wallets.map((wallet) => [wallet.ownerId as string, wallet]));
}

export function findAccount(db: Knex | Knex.Transaction, identity: AccountIdentity): Promise<LedgerAccount | undefined> {
  return new LedgerRepository(db).findAccount(identity);
}

/** Freezes or unfreezes an account: a frozen account takes part in no posting (except reversals). */
export function setAccountStatus(db: Knex | Knex.Transaction, accountId: string, status: AccountStatus): Promise<boolean> {
  return new LedgerRepository(db).setAccountStatus(accountId, status);
}

/**
 * The invariants: the sum of all entries per currency is zero, every posting balances, every
 * balance equals the sum of its entries, and no account that may not go negative is negative.
 * Returns the violations (none when healthy). Given the knex handle, reads one consistent
 * snapshot (its own read-only repeatable-read transaction). Given a transaction, joins it and
 * reads what that transaction sees (a seed's rows before it commits), at that transaction's
 * isolation level: only a repeatable-read caller gets one snapshot across the checks.
 */
export function reconcile(db: Knex | Knex.Transaction): Promise<InvariantViolation[]> {
  return withTransaction(db, (trx) => new LedgerRepository(trx).invariantViolations(), {
    isolationLevel: 'repeatable read',
    readOnly: true,
  });
}
