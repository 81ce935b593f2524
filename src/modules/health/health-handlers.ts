import type { Handlers } from '../../contract';
import type { HealthService } from './health-service';

/** Seconds a monitor should wait before asking again after a 503 (probes refresh every second). */
export const HEALTH_RETRY_AFTER_SECONDS = 5;

/**
 * GET /api/health (mounted ahead of the request pipeline, not rate-limited: see the contract).
 * 200 while the database answers: a cache outage degrades (login fails closed, everything
 * else goes on), it does not take the instance out of rotation. 503 with `Retry-After` when
 * the database does not answer.
 */
export function healthHandlers(health: HealthService): Handlers<'getHealth'> {
  return {
    async getHealth() {
      const data = await health.check();
      if (data.database.status !== 'up') {
        return { status: 503, data, message: 'The database does not answer.', headers: { 'Retry-After': HEALTH_RETRY_AFTER_SECONDS } };
      }
      return data.cache.status === 'up' ? { data } : { data, message: 'The cache does not answer.' };
    },
  };
}
