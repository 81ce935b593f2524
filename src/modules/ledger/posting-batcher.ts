import type { Knex } from 'knex';
import { DomainError } from '../../errors';
import { currentTransactionGuard, withSavepoint, withTransaction, withoutTransactionGuard } from '../../db/transaction';
import { GroupCommit } from './group-commit';
import { LedgerRepository } from './ledger-repository';
import { ensureAccounts } from './ledger-service';
import type { AccountIdentity } from './ledger-types';

/**
 * Group commit for the postings that services make in TypeScript: escrow
 * funding and settlement, tontine contributions and their payouts, payments received. Transfers,
 * whose decision needs no locked read, are applied a window at a time in one statement
 * (src/modules/writes/write-batch.ts); this one runs the same services' code, so the
 * lifecycle rules stay in one place (src/domain/lifecycle.ts).
 *
 * - Each item is a unit of work (`work(trx)`: the Idempotency-Key's claim, the effect, the key's
 *   completion) with its own outcome. The items gathered in one window (GroupCommit: at most
 *   2 ms, at most 64) are split into groups that contend (the same object, the same debited
 *   wallet, the same hot account: contentionGroups); each group is one transaction and the
 *   groups run side by side. Items that contend would wait for each other's commit anyway; one
 *   transaction runs them back to back. Items that do not would only be serialised by it.
 * - In a group, items run one after the other, each under a savepoint of its own: an item that
 *   refuses (any DomainError: InsufficientFunds, a frozen wallet, a replayed key, a state the
 *   lifecycle refuses) is rolled back to its savepoint alone and answered with its error; the
 *   next item never sees what it did.
 * - Every answer waits for the COMMIT that holds its item.
 * - Locks: an item names the objects it changes (`locks`: an escrow, a tontine, a payment). With
 *   two items or more, a batch first locks every named object, kind by kind in one fixed order
 *   and by id, then every ledger account their postings touch, in id order (LedgerRepository
 *   .lockAccounts): the order of a single request (its object, then ledger_post's accounts in id
 *   order), so batches never deadlock each other nor single postings.
 * - A batch never creates an account: one that an item will touch and that does not exist yet is
 *   created first, committed on its own while no lock is held, then the batch runs again (a first
 *   use only: another transaction inserting the same account would wait for the batch, and the
 *   batch for it).
 * - Anything else an item throws (a lost connection, a deadlock, a bug) fails the whole batch:
 *   it is rolled back and each item runs again alone, in its own transaction (retried on a
 *   deadlock or a serialization failure), whose result or error is its answer. An item whose
 *   batch did commit but lost its answer finds its key completed and answers 409
 *   IdempotencyKeyAlreadyProcessed naming what it produced: never a second effect.
 */

/** An object an item changes, to be locked before the batch's items run. */
export interface LockedObject {
  /** A kind with a registered locker (`escrow`, `tontine`, `payment`). */
  kind: string;
  id: string;
  /** The user whose wallet the item debits, when the object alone does not say (a contribution's member). */
  userId?: string;
  /** What the item does to it, when that decides which accounts it touches (an escrow's `fund` or settlement). */
  action?: string;
  /** A hot account every such item touches (a currency's clearing account): items naming the same one contend. */
  contendsOn?: string;
}

/** The ledger accounts that postings on some objects touch: by identity (not created yet is fine) or by id. */
export interface TouchedAccounts {
  identities?: AccountIdentity[];
  accountIds?: string[];
}

/**
 * Locks the rows of `objects` (all of one kind, as the items named them: an id may come more
 * than once) FOR UPDATE in id order, and answers the accounts their postings may touch.
 */
export type ObjectLocker = (trx: Knex.Transaction, objects: readonly LockedObject[]) => Promise<TouchedAccounts>;

export interface PostingBatcherOptions {
  windowMs?: number;
  maxItems?: number;
  onBatch?(size: number, failed: boolean): void;
}

interface Item {
  work(trx: Knex.Transaction): Promise<unknown>;
  locks: readonly LockedObject[];
  /** Answers the item's caller as soon as its group is done (not when the whole window is). */
  answer(outcome: Outcome): void;
}

type Outcome = { value: unknown } | { refusal: DomainError } | { failure: unknown };

export class PostingBatcher {
  private readonly lockers = new Map<string, ObjectLocker>();
  private readonly window: GroupCommit<Item, Outcome>;
  /** Transactions sent, by their number of items (index = size): the batch size distribution. */
  readonly sizes: number[] = [];
  batchesFailed = 0;

  constructor(
    private readonly knex: Knex,
    private readonly options: PostingBatcherOptions = {},
  ) {
    this.window = new GroupCommit<Item, Outcome>({
      windowMs: options.windowMs,
      maxItems: options.maxItems,
      runBatch: (items) => this.runWindow(items),
      // Only if runWindow itself broke (it answers every item, failures included).
      runOne: (item) => this.runAlone(item),
    });
  }

  /** How to lock the objects of `kind` (a module registers its own kind once). */
  registerLocker(kind: string, locker: ObjectLocker): void {
    if (this.lockers.has(kind)) throw new Error(`posting batcher: a locker for "${kind}" is already registered`);
    this.lockers.set(kind, locker);
  }

  /**
   * Runs `work` with the items gathered in the same window that contend with it, and answers its
   * result once their transaction has committed; throws its refusal (a DomainError) or, when its
   * batch failed as a whole, whatever it threw when run alone. `work` must have no effect outside
   * the database, and must be safe to run again after a run whose commit went through unanswered
   * (it claims an Idempotency-Key, or re-checks under its locks what it changes): it may run more
   * than once (in its batch, then alone, then again on a new connection when its connection was
   * lost).
   */
  async run<T>(work: (trx: Knex.Transaction) => Promise<T>, locks: readonly LockedObject[] = []): Promise<T> {
    for (const object of locks) {
      if (!this.lockers.has(object.kind)) throw new Error(`posting batcher: no locker for "${object.kind}"`);
    }
    // The item checks its request's guard (withTransactionGuard) in its own savepoint; the
    // window's transactions, shared by several requests, run outside any one request's guard.
    const guard = currentTransactionGuard();
    const guarded = guard
      ? async (trx: Knex.Transaction) => {
          const value = await work(trx);
          await guard(trx);
          return value;
        }
      : work;
    const outcome = await new Promise<Outcome>((answer, fail) => {
      // The window's own answer comes once every group of it is done (or, should runWindow
      // break, from its item run alone): whichever settles the item first wins.
      withoutTransactionGuard(() => this.window.submit({ work: guarded, locks, answer })).then(answer, fail);
    });
    if ('refusal' in outcome) throw outcome.refusal;
    if ('failure' in outcome) throw outcome.failure;
    return outcome.value as T;
  }

  /**
   * The items of one window, split into groups that contend (contentionGroups): each group is
   * one transaction, and the groups run side by side. Items that share nothing gain nothing from
   * one transaction (PostgreSQL already flushes concurrent commits together) and would only wait
   * for each other: measured on the escrow benchmark, batching them all cost about 15 %.
   */
  private async runWindow(items: Item[]): Promise<Outcome[]> {
    const outcomes: Outcome[] = [];
    await Promise.all(
      contentionGroups(items).map(async (group) => {
        const members = group.map((index) => items[index] as Item);
        const answers = await this.runGroup(members);
        // Each caller hears as soon as its own group has committed.
        members.forEach((item, k) => item.answer(answers[k] as Outcome));
        group.forEach((index, k) => (outcomes[index] = answers[k] as Outcome));
      }),
    );
    return outcomes;
  }

  /** One transaction for `items`; if it fails as a whole, each item again alone. */
  private async runGroup(items: Item[]): Promise<Outcome[]> {
    this.sizes[items.length] = (this.sizes[items.length] ?? 0) + 1;
    let outcomes: Outcome[];
    try {
      outcomes = items.length === 1 ? [await this.runFirst(items[0] as Item)] : await this.runBatch(items);
    } catch {
      this.batchesFailed += 1;
      this.told(items.length, true);
      // Item by item, each in its own transaction: never answered from the failed batch.
      return Promise.all(items.map((item) => this.runAlone(item).catch((failure: unknown) => ({ failure }))));
    }
    this.told(items.length, false);
    return outcomes;
  }

  /** Tells onBatch; a callback that throws (metrics, logs) never fails a group that committed. */
  private told(size: number, failed: boolean): void {
    try {
      this.options.onBatch?.(size, failed);
    } catch {
      // Nothing to undo: the callback only observes.
    }
  }

  /**
   * An item that contends with no other: its own transaction is its savepoint, and it takes its
   * locks in its own order, as a single posting does. Not retried here: a failure runs it again
   * through runAlone.
   */
  private async runFirst(item: Item): Promise<Outcome> {
    try {
      return { value: await withTransaction(this.knex, item.work, { retries: 0 }) };
    } catch (error) {
      if (error instanceof DomainError) return { refusal: error };
      throw error;
    }
  }

  /**
   * An item run again alone, retried on a deadlock or a serialization failure and, on a new
   * connection, on a lost one: every item claims an Idempotency-Key or re-checks under its locks,
   * so a run whose commit went through answers from what it did.
   */
  private async runAlone(item: Item): Promise<Outcome> {
    try {
      return { value: await withTransaction(this.knex, item.work, { retryOnConnectionLoss: true }) };
    } catch (error) {
      if (error instanceof DomainError) return { refusal: error };
      throw error;
    }
  }

  private async runBatch(items: Item[]): Promise<Outcome[]> {
    try {
      return await this.runTogether(items);
    } catch (error) {
      if (!(error instanceof AccountsMissing)) throw error;
      // Created and committed on their own, before any lock is held: a batch never inserts an
      // account (another transaction inserting the same one would wait for it, and it for them).
      // Missing again (never seen): the group fails, and its items run alone.
      await ensureAccounts(this.knex, error.identities);
      return this.runTogether(items);
    }
  }

  private runTogether(items: Item[]): Promise<Outcome[]> {
    return withTransaction(
      this.knex,
      async (trx) => {
        const missing = await this.lockInOrder(trx, items);
        if (missing.length > 0) throw new AccountsMissing(missing);
        const outcomes: Outcome[] = [];
        for (const item of items) {
          try {
            outcomes.push({ value: await withSavepoint(trx, item.work) });
          } catch (error) {
            if (!(error instanceof DomainError)) throw error;
            outcomes.push({ refusal: error });
          }
        }
        return outcomes;
      },
      { retries: 0 },
    );
  }

  /**
   * Every named object, kind by kind (in the order of their names; each locker locks its rows in
   * id order), then every account they touch, in id order. Answers the identities of the
   * accounts that do not exist yet.
   */
  private async lockInOrder(trx: Knex.Transaction, items: readonly Item[]): Promise<AccountIdentity[]> {
    const byKind = new Map<string, LockedObject[]>();
    // Each object as named (the same tontine twice, for two members: both wallets count).
    for (const object of items.flatMap((item) => item.locks)) byKind.set(object.kind, [...(byKind.get(object.kind) ?? []), object]);
    const identities: AccountIdentity[] = [];
    const accountIds: string[] = [];
    for (const kind of [...byKind.keys()].sort()) {
      const touched = await (this.lockers.get(kind) as ObjectLocker)(trx, byKind.get(kind) as LockedObject[]);
      identities.push(...(touched.identities ?? []));
      accountIds.push(...(touched.accountIds ?? []));
    }
    return new LedgerRepository(trx).lockAccounts(identities, accountIds);
  }
}

/**
 * The items of a window in groups that contend, each in arrival order: two items contend when
 * they change the same object, debit the same user's wallet, or name the same hot account
 * (`contendsOn`). Union-find over those keys; groups in order of their first item.
 */
export function contentionGroups(items: ReadonlyArray<{ locks: readonly LockedObject[] }>): number[][] {
  const parent = items.map((_, index) => index);
  const root = (index: number): number => {
    let at = index;
    while (parent[at] !== at) at = parent[at] = parent[parent[at] as number] as number;
    return at;
  };
  const owner = new Map<string, number>();
  items.forEach((item, index) => {
    for (const object of item.locks) {
      for (const key of [`${object.kind} ${object.id}`, object.userId && `wallet ${object.userId}`, object.contendsOn && `hot ${object.contendsOn}`]) {
        if (!key) continue;
        const first = owner.get(key);
        if (first === undefined) owner.set(key, index);
        else parent[root(index)] = root(first);
      }
    }
  });
  const groups = new Map<number, number[]>();
  items.forEach((_, index) => {
    const group = groups.get(root(index));
    if (group) group.push(index);
    else groups.set(root(index), [index]);
  });
  return [...groups.values()];
}

/** A batch's accounts that do not exist yet: they are created on their own, then the batch runs again. */
class AccountsMissing extends Error {
  constructor(readonly identities: AccountIdentity[]) {
    super();
  }
}
