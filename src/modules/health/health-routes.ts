import { Router } from 'express';
import type { HealthService } from './health-service';

export function healthRoutes(health: HealthService): Router {
  const router = Router();
  // 200 while the database answers (a cache outage degrades, it does not take us down).
  router.get('/health', async (_req, res) => {
    const data = await health.check();
    const up = data.database.status === 'up';
    res.status(up ? 200 : 503).json({ success: up, data, ...(up ? {} : { message: 'The database is not answering.' }) });
  });
  return router;
}
