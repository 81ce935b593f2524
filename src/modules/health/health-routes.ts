import type { RequestHandler } from 'express';
import type { HealthService } from './health-service';

/** Seconds a monitor should wait before asking again after a 503 (probes refresh every second). */
export const HEALTH_RETRY_AFTER_SECONDS = 5;

/**
 * GET /api/health. Mounted ahead of the request pipeline (see src/http/app.ts): probes and
 * monitors poll it hard, and it must report the service's state, not queue behind request
 * logging and contract validation. It keeps the request id and security headers, and is not
 * rate-limited (a 429 would take a healthy instance out of a load balancer's rotation; the
 * probes behind it run at most once a second, so polling cannot load the database).
 * 200 while the database answers: a cache outage degrades (login fails closed, everything
 * else goes on), it does not take the instance out of rotation. 503 with `Retry-After` when
 * the database does not answer.
 */
export function healthHandler(health: HealthService): RequestHandler {
  return async (_req, res) => {
    const data = await health.check();
    if (data.database.status !== 'up') {
      res.setHeader('Retry-After', String(HEALTH_RETRY_AFTER_SECONDS));
      res.status(503).json({ success: false, data, message: 'The database does not answer.' });
      return;
    }
    res.status(200).json({ success: true, data, ...(data.cache.status === 'up' ? {} : { message: 'The cache does not answer.' }) });
  };
}
