import { createHash } from 'node:crypto';

/** One client's count in the current window. */
export interface WindowCount {
  hits: number;
  /** When this client's window ends (ms since the epoch). */
  resetAt: number;
  /** The RateLimit-Policy header of this client: made once per client, not per request. */
  policy: string;
}

/**
 * The RateLimit partition key express-rate-limit writes (`pk=:...:` of RateLimit-Policy): the
 * first 12 hex digits of the key's SHA-256, in base64. Kept identical so a client sees the same
 * headers from every limiter.
 */
export function partitionKey(key: string): string {
  return Buffer.from(createHash('sha256').update(key).digest('hex').slice(0, 12)).toString('base64');
}

/**
 * A fixed-window counter per key, in this process's memory, counted synchronously (no chain
 * of promises, hash per request or Date per hit as with express-rate-limit's MemoryStore,
 * which cost a sixth of the health route's CPU). The window of a key
 * starts at its first hit and lasts `windowMs`, as in express-rate-limit's MemoryStore, so
 * the counts, the headers and the 429 are the same. Expired keys are dropped every window.
 */
export class FixedWindowCounter {
  private readonly counts = new Map<string, WindowCount>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly windowMs: number,
    private readonly policyOf: (key: string) => string,
    private readonly now: () => number = Date.now,
  ) {
    this.sweeper = setInterval(() => this.sweep(), windowMs);
    this.sweeper.unref();
  }

  /** Counts one hit of `key` and returns its count (the same object until the key expires). */
  hit(key: string): WindowCount {
    const now = this.now();
    let count = this.counts.get(key);
    if (count === undefined) {
      count = { hits: 0, resetAt: now + this.windowMs, policy: this.policyOf(key) };
      this.counts.set(key, count);
    } else if (count.resetAt <= now) {
      count.hits = 0;
      count.resetAt = now + this.windowMs;
    }
    count.hits += 1;
    return count;
  }

  /** Whole seconds until `count`'s window ends (0 once it has ended), as RateLimit's `t`. */
  secondsLeft(count: WindowCount): number {
    return Math.max(0, Math.ceil((count.resetAt - this.now()) / 1000));
  }

  /** Drops the keys whose window has ended. */
  sweep(): void {
    const now = this.now();
    for (const [key, count] of this.counts) if (count.resetAt <= now) this.counts.delete(key);
  }

  get size(): number {
    return this.counts.size;
  }

  stop(): void {
    clearInterval(this.sweeper);
  }
}
