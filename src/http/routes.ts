import { Router, type Express } from 'express';
import { NotImplementedError } from '../errors';
import { healthRoutes } from '../modules/health/health-routes';
import type { Services } from '../services';
import type { AppDeps } from './app';

/**
 * Operations of the contract that are not built yet. They still pass through the
 * validator (authentication, and the organisation access policy where it applies)
 * before answering 501 NotImplemented; test/api/not-implemented.test.ts lists them.
 */
export const NOT_IMPLEMENTED_OPERATIONS = [
  { method: 'get', path: '/escrows', operationId: 'listEscrows' },
  { method: 'post', path: '/escrows', operationId: 'createEscrow' },
  { method: 'get', path: '/tontines', operationId: 'listTontines' },
] as const;

function notImplementedRoutes(): Router {
  const router = Router();
  for (const operation of NOT_IMPLEMENTED_OPERATIONS) {
    router[operation.method](operation.path, () => {
      throw new NotImplementedError(operation.operationId);
    });
  }
  return router;
}

/** Every module's router, mounted under /api. */
export function mountRoutes(app: Express, services: Services, _deps: AppDeps): void {
  const api = Router();
  api.use(healthRoutes(services.health));
  api.use(notImplementedRoutes());
  app.use('/api', api);
}
