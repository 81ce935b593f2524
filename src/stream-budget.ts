import { DomainError } from './errors';

export interface StreamBudgetLimits {
  /** Streams one caller may have open at once; beyond, 429 TooManyStreams. */
  perCaller: number;
  /** Streams open at once across all callers; beyond, 503 ServiceUnavailable. */
  total: number;
  /** The Retry-After of both refusals. */
  retryAfterSeconds: number;
}

/**
 * Admission of long responses (CSV statements): a slow or stalled client keeps its stream
 * open for as long as the stall timeout allows, so the number of open streams is bounded per
 * caller and in total. Combined with streams that hold a database connection only while a
 * batch is read, slow clients together can never hold more of the pool than `total`
 * batch reads.
 */
export class StreamBudget {
  private open = 0;
  private readonly byCaller = new Map<string, number>();

  constructor(readonly limits: StreamBudgetLimits) {}

  /** Streams open now (for metrics). */
  get inUse(): number {
    return this.open;
  }

  /** Runs `stream` inside a slot of `callerId`, or refuses at once when none is free. */
  async run<T>(callerId: string, stream: () => Promise<T>): Promise<T> {
    const release = this.admit(callerId);
    try {
      return await stream();
    } finally {
      release();
    }
  }

  private admit(callerId: string): () => void {
    const mine = this.byCaller.get(callerId) ?? 0;
    const retryAfter = { 'Retry-After': String(this.limits.retryAfterSeconds) };
    if (mine >= this.limits.perCaller) {
      throw new DomainError(
        'TooManyStreams',
        'rate_limited',
        `At most ${this.limits.perCaller} statement downloads of yours may run at once: finish one, then retry after the time in Retry-After.`,
        undefined,
        retryAfter,
      );
    }
    if (this.open >= this.limits.total) {
      throw new DomainError(
        'ServiceUnavailable',
        'unavailable',
        'Too many statement downloads are running: retry after the time in Retry-After.',
        undefined,
        retryAfter,
      );
    }
    this.open += 1;
    this.byCaller.set(callerId, mine + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.open -= 1;
      const left = (this.byCaller.get(callerId) ?? 1) - 1;
      if (left > 0) this.byCaller.set(callerId, left);
      else this.byCaller.delete(callerId);
    };
  }
}
