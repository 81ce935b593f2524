/**
 * What happens after an attempt: the pure rules of the retry schedule (Standard Webhooks,
 * Svix-like). `delaysSeconds[n]` is the wait before attempt n + 1 (the first is 0); after the
 * last one the delivery is exhausted.
 */
export interface AttemptResult {
  /** `succeeded`: a 2xx in time; `gone`: a 410; `failed`: anything else (status, timeout, refused connection, redirect). */
  outcome: 'succeeded' | 'failed' | 'gone';
  httpStatus: number | null;
  error: string | null;
  durationMs: number;
  /** Retry-After (seconds) of a 429 or 503, when given. */
  retryAfterSeconds?: number;
}

export type NextStep = { status: 'succeeded' } | { status: 'failed'; retryInMs: number | null } | { status: 'exhausted' };

/** Jitter: up to +10 % of the delay (`random` in [0, 1)). */
const JITTER = 0.1;

/**
 * After the `attemptCount`-th attempt (1 for the first) ended with `result`: done, retry
 * after a delay (the schedule's next one; a Retry-After shortens it, never lengthens it), or
 * exhausted. A 410 schedules nothing (the endpoint is disabled).
 */
export function nextStep(result: AttemptResult, attemptCount: number, delaysSeconds: readonly number[], random: number): NextStep {
  if (result.outcome === 'succeeded') return { status: 'succeeded' };
  if (result.outcome === 'gone') return { status: 'failed', retryInMs: null };
  const scheduled = delaysSeconds[attemptCount];
  if (scheduled === undefined) return { status: 'exhausted' };
  const seconds = result.retryAfterSeconds !== undefined ? Math.min(result.retryAfterSeconds, scheduled) : scheduled;
  return { status: 'failed', retryInMs: Math.round(seconds * 1000 * (1 + JITTER * random)) };
}

/** Retry-After as seconds: a number of seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: Date): number | undefined {
  if (value === undefined) return undefined;
  // Number() reads around spaces as trim() does; a blank value is neither digits nor a date.
  if (/^\d+$/.test(value.trim())) return Number(value);
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now.getTime()) / 1000));
}

/** True when the endpoint has failed without a success for at least `hours`. */
export function failingTooLong(failingSince: Date | null, now: Date, hours: number): boolean {
  return failingSince !== null && now.getTime() - failingSince.getTime() >= hours * 3_600_000;
}
