import { AsyncLocalStorage } from "node:async_hooks";
import type { Knex } from "knex";
import { isConnectionLoss } from "./transaction";

/**
 * Reads that may lag (DATABASE_READ_URL). List and statement reads may be answered by a
 * standby, which replays the primary's changes a little later. Three rules keep that safe:
 * - a caller (user or organisation) that wrote within the read-after-write window reads from
 *   the primary, so it always sees its own writes (RecentWrites remembers the last write, in
 *   Redis when there is one, so every instance knows it);
 * - the standby's replay lag is measured periodically (StandbyMonitor), never per request:
 *   past the configured bound, or when the standby does not answer, reads go to the primary;
 * - a read that loses its standby connection is run again on the primary.
 * The choice is made once per request, by the HTTP mount (ReadRouting.run); services read
 * through `readConnection(this.knex)`, which gives the chosen connection inside such a request
 * and their own primary connection everywhere else. Writes never go through it.
 */

export interface DatabaseReadConfig {
  /** DATABASE_READ_URL: the standby (one host or several, as DATABASE_URL); unset: every read on the primary. */
  url: string | undefined;
  /** DATABASE_READ_AFTER_WRITE_SECONDS: a caller that wrote this recently reads from the primary. */
  afterWriteSeconds: number;
  /** DATABASE_READ_MAX_LAG_MS: a standby whose replay lags more than this is not read. */
  maxLagMs: number;
  /** DATABASE_READ_LAG_CHECK_MS: how often each instance measures the standby's lag. */
  lagCheckIntervalMs: number;
}

export type ReadTarget = "primary" | "standby";

export type ReadReason =
  | "recent-write"
  | "standby-unchecked"
  | "standby-unreachable"
  | "standby-lagging"
  | "standby-current";

/** What the last periodic check of the standby found. */
export interface StandbyState {
  reachable: boolean;
  /** Replay lag in milliseconds (0 for a server not in recovery; Infinity when nothing was replayed yet). */
  lagMs: number;
  /** When the check finished (epoch milliseconds). */
  checkedAt: number;
}

export interface ReadDecisionInput {
  /** The caller wrote within the read-after-write window. */
  recentWrite: boolean;
  /** The last check of the standby; undefined before the first. */
  standby: StandbyState | undefined;
  maxLagMs: number;
  /** A check older than this is not trusted (the checks stopped). */
  staleAfterMs: number;
  now: number;
}

/** The routing decision of one read: the standby only when nothing says it may be behind the caller. */
export function chooseReadTarget(input: ReadDecisionInput): {
  target: ReadTarget;
  reason: ReadReason;
} {
  if (input.recentWrite) return { target: "primary", reason: "recent-write" };
  const standby = input.standby;
  if (!standby || input.now - standby.checkedAt > input.staleAfterMs)
    return { target: "primary", reason: "standby-unchecked" };
  if (!standby.reachable)
    return { target: "primary", reason: "standby-unreachable" };
  if (!(standby.lagMs <= input.maxLagMs))
    return { target: "primary", reason: "standby-lagging" };
  return { target: "standby", reason: "standby-current" };
}

/**
 * The standby's replay lag: `now() - pg_last_xact_replay_timestamp()`. A server not in
 * recovery replays nothing and lags by nothing (a read URL that names a primary, or a standby
 * promoted by a failover); a standby that has replayed no transaction since it started has an
 * unknown lag, reported as null (treated as lagging).
 */
export const REPLAY_LAG_SQL = `SELECT CASE WHEN NOT pg_is_in_recovery() THEN 0::float8
  ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8 * 1000 END AS lag_ms`;

export interface StandbyMonitorOptions {
  /** Runs the lag query on the standby and returns its lag_ms (null: unknown). */
  measure(): Promise<number | null>;
  intervalMs: number;
  /** A check that takes longer than this counts as unreachable. */
  timeoutMs: number;
  clock?: () => number;
  /** Told when the standby changes between usable and not (reachable and within the bound), with the state. */
  onChange?(usable: boolean, state: StandbyState, error?: unknown): void;
  maxLagMs: number;
}

/** Measures the standby's lag every `intervalMs` (one query per instance and period, whatever the traffic). */
export class StandbyMonitor {
  private state: StandbyState | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private usable: boolean | undefined;
  private readonly clock: () => number;

  constructor(private readonly options: StandbyMonitorOptions) {
    this.clock = options.clock ?? Date.now;
  }

  get current(): StandbyState | undefined {
    return this.state;
  }

  start(): void {
    if (this.timer) return;
    void this.check();
    this.timer = setInterval(() => void this.check(), this.options.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One check now (a check under way is awaited, not doubled). */
  check(): Promise<void> {
    this.running ??= this.measureOnce().finally(
      () => (this.running = undefined)
    );
    return this.running;
  }

  /** A read lost its standby connection: unreachable until the next check says otherwise. */
  markUnreachable(error: unknown): void {
    this.record(
      { reachable: false, lagMs: Infinity, checkedAt: this.clock() },
      error
    );
  }

  private async measureOnce(): Promise<void> {
    let timeout: NodeJS.Timeout | undefined;
    try {
      const lag = await Promise.race([
        this.options.measure(),
        new Promise<never>((_resolve, reject) => {
          timeout = setTimeout(
            () =>
              reject(
                new Error(
                  `the standby did not answer the lag check within ${this.options.timeoutMs} ms`
                )
              ),
            this.options.timeoutMs
          );
        }),
      ]);
      this.record({
        reachable: true,
        lagMs:
          lag === null || !Number.isFinite(lag) ? Infinity : Math.max(0, lag),
        checkedAt: this.clock(),
      });
    } catch (error) {
      this.record(
        { reachable: false, lagMs: Infinity, checkedAt: this.clock() },
        error
      );
    } finally {
      clearTimeout(timeout);
    }
  }

  private record(state: StandbyState, error?: unknown): void {
    this.state = state;
    const usable = state.reachable && state.lagMs <= this.options.maxLagMs;
    if (usable !== this.usable) this.options.onChange?.(usable, state, error);
    this.usable = usable;
  }
}

/** The last write of each caller, for the read-after-write window. */
export interface RecentWrites {
  /** Records a write by every key now (a user, an organisation). */
  mark(keys: readonly string[]): Promise<void>;
  /** True when any key wrote within the window (or when that cannot be told). */
  wroteRecently(keys: readonly string[]): Promise<boolean>;
}

/** One instance's memory: enough when exactly one instance runs. */
export class MemoryRecentWrites implements RecentWrites {
  private readonly until = new Map<string, number>();

  constructor(
    private readonly windowMs: number,
    private readonly clock: () => number = Date.now
  ) {}

  async mark(keys: readonly string[]): Promise<void> {
    const now = this.clock();
    for (const key of keys) this.until.set(key, now + this.windowMs);
    if (this.until.size > 10_000)
      for (const [key, until] of this.until)
        if (until <= now) this.until.delete(key);
  }

  async wroteRecently(keys: readonly string[]): Promise<boolean> {
    const now = this.clock();
    return keys.some((key) => (this.until.get(key) ?? 0) > now);
  }
}

/** The commands of a Redis client used here (ioredis's). */
export interface RecentWritesRedis {
  set(
    key: string,
    value: string,
    mode: "PX",
    milliseconds: number
  ): Promise<unknown>;
  exists(...keys: string[]): Promise<number>;
}

const REDIS_PREFIX = "read-after-write:";

/**
 * Shared by every instance through Redis: a key per caller that expires with the window. When
 * Redis fails, a write is still remembered by this instance, and a caller whose writes cannot
 * be checked reads from the primary (the safe side).
 */
export class RedisRecentWrites implements RecentWrites {
  private readonly local: MemoryRecentWrites;

  constructor(
    private readonly redis: RecentWritesRedis,
    private readonly windowMs: number,
    clock: () => number = Date.now
  ) {
    this.local = new MemoryRecentWrites(windowMs, clock);
  }

  async mark(keys: readonly string[]): Promise<void> {
    await this.local.mark(keys);
    await Promise.all(
      keys.map((key) =>
        this.redis.set(REDIS_PREFIX + key, "1", "PX", this.windowMs)
      )
    ).catch(() => undefined);
  }

  async wroteRecently(keys: readonly string[]): Promise<boolean> {
    if (keys.length === 0) return false;
    if (await this.local.wroteRecently(keys)) return true;
    try {
      return (
        (await this.redis.exists(...keys.map((key) => REDIS_PREFIX + key))) > 0
      );
    } catch {
      return true;
    }
  }
}

/** The keys of a caller: its user and, when it acts for one, its organisation. */
export function writerKeys(caller: {
  userId?: string;
  organizationId?: string;
}): string[] {
  return [
    ...(caller.userId ? [`user:${caller.userId}`] : []),
    ...(caller.organizationId ? [`org:${caller.organizationId}`] : []),
  ];
}

/** No standby connection could be had in time (knex's acquire timeout). */
function isPoolTimeout(error: unknown): boolean {
  return (error as { name?: unknown } | null)?.name === "KnexTimeoutError";
}

const chosen = new AsyncLocalStorage<Knex>();

/**
 * The connection for a list or statement read: inside a request routed by ReadRouting.run,
 * the one it chose (the standby or the primary); anywhere else `primary` itself. Never used
 * for a write.
 */
export function readConnection(primary: Knex): Knex {
  return chosen.getStore() ?? primary;
}

export interface ReadRoutingOptions {
  standby: Knex;
  monitor: StandbyMonitor;
  recentWrites: RecentWrites;
  maxLagMs: number;
  staleAfterMs: number;
  clock?: () => number;
  /** Told of each decision (metrics). */
  onDecision?(target: ReadTarget, reason: ReadReason): void;
  /** Told when a read on the standby failed and was run again on the primary. */
  onFallback?(error: unknown): void;
}

/** The one read-connection provider: decides per request where its reads go. */
export class ReadRouting {
  private readonly clock: () => number;

  constructor(private readonly options: ReadRoutingOptions) {
    this.clock = options.clock ?? Date.now;
  }

  async decide(
    keys: readonly string[]
  ): Promise<{ target: ReadTarget; reason: ReadReason }> {
    const recentWrite = await this.options.recentWrites.wroteRecently(keys);
    return chooseReadTarget({
      recentWrite,
      standby: this.options.monitor.current,
      maxLagMs: this.options.maxLagMs,
      staleAfterMs: this.options.staleAfterMs,
      now: this.clock(),
    });
  }

  /**
   * Runs `read` with its list and statement reads on the connection chosen for the caller.
   * A read on the standby that loses its connection (or meets a recovery conflict) runs
   * again on the primary, as long as `canRetry` says nothing was sent yet.
   */
  async run<T>(
    keys: readonly string[],
    read: () => Promise<T>,
    canRetry: () => boolean = () => true
  ): Promise<T> {
    const { target, reason } = await this.decide(keys);
    this.options.onDecision?.(target, reason);
    if (target === "primary") return read();
    try {
      return await chosen.run(this.options.standby, read);
    } catch (error) {
      if (!(isConnectionLoss(error) || isPoolTimeout(error)) || !canRetry())
        throw error;
      this.options.monitor.markUnreachable(error);
      this.options.onFallback?.(error);
      return read();
    }
  }

  /** Records a write by the caller: its next reads within the window go to the primary. */
  markWrite(keys: readonly string[]): Promise<void> {
    return this.options.recentWrites.mark(keys);
  }
}
