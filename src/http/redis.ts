import { Redis } from 'ioredis';
import type { Logger } from 'pino';

/**
 * Commands fail fast while Redis is unreachable (no offline queue), so a cache outage turns
 * into an immediate store error that each limiter handles by its own policy, not a hang.
 */
export async function connectRedis(url: string, logger: Logger): Promise<Redis> {
  const redis = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
  redis.on('error', (err) => logger.warn({ err: err.message }, 'redis error'));
  try {
    await redis.connect();
  } catch (err) {
    logger.warn({ err: (err as Error).message }, 'redis unreachable at start; retrying in the background');
  }
  return redis;
}
