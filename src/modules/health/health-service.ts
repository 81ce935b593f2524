import type { Knex } from 'knex';
import type { Redis } from 'ioredis';
import { systemClock, type Clock } from '../../clock';
import { ping } from '../../db/database';

export interface ComponentHealth {
  status: 'up' | 'down';
  latency_ms: number | null;
}

export interface Health {
  status: 'ok' | 'degraded';
  version: string;
  uptime_s: number;
  database: ComponentHealth;
  cache: ComponentHealth & { kind: 'redis' | 'memory' };
}

const PROBE_TIMEOUT_MS = 2_000;

async function probe(check: () => Promise<unknown>): Promise<ComponentHealth> {
  const started = process.hrtime.bigint();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('probe timed out')), PROBE_TIMEOUT_MS);
      }),
    ]);
    const elapsed = Number(process.hrtime.bigint() - started) / 1e6;
    return { status: 'up', latency_ms: Math.round(elapsed * 100) / 100 };
  } catch {
    return { status: 'down', latency_ms: null };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Probes are shared for `cacheMs` (1 s by default): load balancers and monitors poll health
 * hard, and one probe per second is plenty to detect an outage without turning every poll
 * into a database round trip. Concurrent callers share the probe in flight.
 */
export class HealthService {
  private readonly startedAt: number;
  private latest: { at: number; probes: Promise<[ComponentHealth, ComponentHealth]> } | undefined;

  constructor(
    private readonly knex: Knex,
    private readonly redis: Redis | undefined,
    private readonly version: string,
    private readonly clock: Clock = systemClock,
    private readonly cacheMs = 1_000,
  ) {
    this.startedAt = clock().getTime();
  }

  async check(): Promise<Health> {
    const now = this.clock().getTime();
    if (!this.latest || now - this.latest.at >= this.cacheMs) this.latest = { at: now, probes: this.probe() };
    const [database, cache] = await this.latest.probes;
    return {
      status: database.status === 'up' && cache.status === 'up' ? 'ok' : 'degraded',
      version: this.version,
      uptime_s: Math.floor((now - this.startedAt) / 1000),
      database,
      cache: { ...cache, kind: this.redis ? 'redis' : 'memory' },
    };
  }

  private probe(): Promise<[ComponentHealth, ComponentHealth]> {
    return Promise.all([
      probe(() => ping(this.knex)),
      this.redis ? probe(() => (this.redis as Redis).ping()) : Promise.resolve<ComponentHealth>({ status: 'up', latency_ms: 0 }),
    ]);
  }
}
