import type { Knex } from "knex";
import { createKnex, type KnexOptions } from "./database";
import {
  MemoryRecentWrites,
  ReadRouting,
  RedisRecentWrites,
  REPLAY_LAG_SQL,
  StandbyMonitor,
  type DatabaseReadConfig,
  type ReadReason,
  type ReadTarget,
  type RecentWritesRedis,
  type StandbyState,
} from "./read-routing";

export interface ReadStandby {
  routing: ReadRouting;
  monitor: StandbyMonitor;
  knex: Knex;
  /** Stops the lag checks and closes the standby's pool. */
  close(): Promise<void>;
}

export interface ReadStandbyOptions extends KnexOptions {
  settings: DatabaseReadConfig & { url: string };
  /** Shares the read-after-write marks between instances; without it each instance remembers its own. */
  redis?: RecentWritesRedis;
  poolMax?: number;
  onStandbyChange?(usable: boolean, state: StandbyState, error?: unknown): void;
  onDecision?(target: ReadTarget, reason: ReadReason): void;
  onFallback?(error: unknown): void;
}

/**
 * Opens the standby of DATABASE_READ_URL (its own pool; several hosts as DATABASE_URL), starts
 * measuring its lag, and returns the routing the HTTP mount uses for list and statement reads.
 */
export function openReadStandby(options: ReadStandbyOptions): ReadStandby {
  const { settings } = options;
  // A standby that does not answer is reported by the lag checks when it changes, not once per
  // connection attempt: knex's own warnings go to `log` (debug level in the service).
  const knex = createKnex(settings.url, "postgres", options.poolMax, {
    onFailover: options.onFailover,
    log: options.log ?? { warn() {}, error() {}, deprecate() {}, debug() {} },
  });
  const monitor = new StandbyMonitor({
    async measure() {
      const result = (await knex.raw(REPLAY_LAG_SQL)) as {
        rows: Array<{ lag_ms: number | string | null }>;
      };
      const lag = result.rows[0]?.lag_ms;
      return lag === null || lag === undefined ? null : Number(lag);
    },
    intervalMs: settings.lagCheckIntervalMs,
    timeoutMs: Math.max(1_000, settings.lagCheckIntervalMs),
    maxLagMs: settings.maxLagMs,
    onChange: options.onStandbyChange,
  });
  const windowMs = settings.afterWriteSeconds * 1000;
  const recentWrites = options.redis
    ? new RedisRecentWrites(options.redis, windowMs)
    : new MemoryRecentWrites(windowMs);
  const routing = new ReadRouting({
    standby: knex,
    monitor,
    recentWrites,
    maxLagMs: settings.maxLagMs,
    // Three missed checks: the checks stopped, and the last one is not trusted.
    staleAfterMs:
      3 * settings.lagCheckIntervalMs +
      Math.max(1_000, settings.lagCheckIntervalMs),
    onDecision: options.onDecision,
    onFallback: options.onFallback,
  });
  monitor.start();
  return {
    routing,
    monitor,
    knex,
    async close() {
      await monitor.stop();
      await knex.destroy();
    },
  };
}
