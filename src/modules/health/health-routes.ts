import type { RequestHandler } from 'express';
import type { HealthService } from './health-service';

/**
 * GET /api/health. Mounted ahead of the request pipeline (see src/http/app.ts): probes and
 * monitors poll it hard, and it must report the service's state, not queue behind request
 * logging and contract validation. It keeps the request id and security headers, and is not
 * rate-limited (a 429 would take a healthy instance out of a load balancer's rotation; the
 * probes behind it run at most once a second, so polling cannot load the database).
 * 200 while the database answers (a cache outage degrades, it does not take us down).
 */
export function healthHandler(health: HealthService): RequestHandler {
  return async (_req, res) => {
    const data = await health.check();
    const up = data.database.status === 'up';
    res.status(up ? 200 : 503).json({ success: up, data, ...(up ? {} : { message: 'The database is not answering.' }) });
  };
}
