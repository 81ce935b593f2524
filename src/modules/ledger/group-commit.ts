/**
 * Group commit for money: one instance collects the postings that arrive close
 * together and sends them to the database as one function call in one transaction, so that a
 * commit, a WAL flush, a round trip and the Node.js side of one query are paid once per batch
 * instead of once per posting.
 *
 * - A batch leaves at once when nothing is in flight (one request alone waits for nothing),
 *   otherwise when `windowMs` has passed since its first item (at most 2 ms) or as soon as
 *   `maxItems` (at most 64) are waiting, whichever comes first.
 * - `runBatch` gets the items in arrival order and answers one outcome per item, in that order,
 *   only after the commit that holds them: each item keeps its own outcome (a refusal is an
 *   outcome, never a failure of the batch).
 * - A batch that fails as a whole (a lost connection, a deadlock, any error) is never answered
 *   as success: each of its items is run again alone by `runOne` (its own transaction), whose
 *   result or error is that item's answer. Items carry their own idempotency keys (and, for
 *   transfers, an attempt id), so an item whose first run did commit (a commit whose answer
 *   was lost) is answered from its key, never applied twice.
 */
export interface GroupCommitOptions<Item, Outcome> {
  /** Longest wait of a batch's first item while another batch is in flight (ms, <= 2). */
  windowMs?: number;
  /** Most items in one batch (<= 64). */
  maxItems?: number;
  runBatch(items: Item[]): Promise<Outcome[]>;
  runOne(item: Item): Promise<Outcome>;
  /** Told the size of each batch sent and whether it failed as a whole (metrics, benchmarks). */
  onBatch?(size: number, failed: boolean): void;
}

interface Waiting<Item, Outcome> {
  item: Item;
  resolve(outcome: Outcome): void;
  reject(error: unknown): void;
}

export const GROUP_COMMIT_WINDOW_MS = 2;
export const GROUP_COMMIT_MAX_ITEMS = 64;

export class GroupCommit<Item, Outcome> {
  private readonly windowMs: number;
  private readonly maxItems: number;
  private queue: Array<Waiting<Item, Outcome>> = [];
  private timer: NodeJS.Timeout | undefined;
  private inFlight = 0;
  /** Batches sent, by size (index = size): the batch size distribution. */
  readonly sizes: number[] = [];
  batchesFailed = 0;

  constructor(private readonly options: GroupCommitOptions<Item, Outcome>) {
    this.windowMs = Math.min(options.windowMs ?? GROUP_COMMIT_WINDOW_MS, GROUP_COMMIT_WINDOW_MS);
    this.maxItems = Math.max(1, Math.min(options.maxItems ?? GROUP_COMMIT_MAX_ITEMS, GROUP_COMMIT_MAX_ITEMS));
  }

  /** Resolves with the item's outcome once the transaction that holds it has committed. */
  submit(item: Item): Promise<Outcome> {
    return new Promise<Outcome>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (this.queue.length >= this.maxItems || this.inFlight === 0) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.windowMs);
    });
  }

  private flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxItems);
      this.inFlight += 1;
      void this.send(batch).finally(() => {
        this.inFlight -= 1;
        // What gathered meanwhile leaves now rather than at the end of its window.
        if (this.inFlight === 0 && this.queue.length > 0) this.flush();
      });
    }
  }

  private async send(batch: Array<Waiting<Item, Outcome>>): Promise<void> {
    this.sizes[batch.length] = (this.sizes[batch.length] ?? 0) + 1;
    let outcomes: Outcome[];
    try {
      outcomes = await this.options.runBatch(batch.map((waiting) => waiting.item));
      if (outcomes.length !== batch.length) throw new Error(`a batch of ${batch.length} answered ${outcomes.length} outcomes`);
    } catch {
      this.batchesFailed += 1;
      this.told(batch.length, true);
      // Item by item, each in its own transaction: never answered from the failed batch.
      await Promise.all(
        batch.map(async (waiting) => {
          try {
            waiting.resolve(await this.options.runOne(waiting.item));
          } catch (error) {
            waiting.reject(error);
          }
        }),
      );
      return;
    }
    this.told(batch.length, false);
    batch.forEach((waiting, index) => waiting.resolve(outcomes[index] as Outcome));
  }

  /** Tells onBatch; a callback that throws (metrics, logs) never keeps a batch's items from their answers nor runs them twice. */
  private told(size: number, failed: boolean): void {
    try {
      this.options.onBatch?.(size, failed);
    } catch {
      // Nothing to undo: the callback only observes.
    }
  }
}
