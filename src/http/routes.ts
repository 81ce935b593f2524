import { Router, type Express } from 'express';
import { NotImplementedError } from '../errors';
import { accountRoutes } from '../modules/accounts/account-routes';
import { authRoutes } from '../modules/auth/auth-routes';
import { invoiceRoutes } from '../modules/invoices/invoice-routes';
import { networkStatusRoutes } from '../modules/network-status/network-status-routes';
import { BUSINESS_ORGANIZATION_PREFIX, organizationAccess } from '../modules/organizations/organization-access';
import { paymentLinksRoutes } from '../modules/payment-links/payment-links-routes';
import { idempotencyRoutes } from '../modules/idempotency/idempotency-routes';
import { tontineHandlers, tontineRoutes } from '../modules/tontines';
import { transfersRoutes } from '../modules/transfers/transfers-routes';
import { walletsRoutes } from '../modules/wallets/wallets-routes';
import type { Services } from '../services';
import type { AppDeps } from './app';
import { contractOperation } from './request-context';

/**
 * Operations of the contract that are known to answer 501 NotImplemented (not built yet).
 * Any contract operation that no router answers gets 501 from the fallback below, after
 * the validator (authentication) and, under /business/organizations/{orgId}, the access
 * policy; test/api/not-implemented.test.ts checks these.
 */
export const NOT_IMPLEMENTED_OPERATIONS = [
  { method: 'get', path: '/escrows', operationId: 'listEscrows' },
  { method: 'post', path: '/escrows', operationId: 'createEscrow' },
] as const;

/** A request the validator matched to a contract operation that no router answered: 501. */
function notImplementedFallback(): Router {
  const router = Router();
  router.use((req, _res, next) => {
    const operation = contractOperation(req);
    if (operation) throw new NotImplementedError(operation.operationId);
    next();
  });
  return router;
}

/** Every module's router, mounted under /api. */
export function mountRoutes(app: Express, services: Services, deps: AppDeps): void {
  const api = Router();
  api.use(authRoutes({ auth: services.auth, sessions: services.sessions, rateLimitBackend: deps.rateLimitBackend, rateLimit: deps.config.rateLimit }));
  // Business routes: the access policy first (src/modules/organizations/access-policy.ts), then their routers.
  api.use(BUSINESS_ORGANIZATION_PREFIX, organizationAccess(services.organizationAccess));
  api.use(accountRoutes(services.accounts));
  api.use(paymentLinksRoutes({ paymentLinks: services.paymentLinks, payments: services.payments, payUrl: deps.config.payUrl }));
  api.use(invoiceRoutes(services.invoices));
  api.use(networkStatusRoutes(services.networkStatus));
  api.use(transfersRoutes(services.transfers), walletsRoutes(services.wallets), idempotencyRoutes(services.idempotency));
  api.use(tontineRoutes(tontineHandlers(services.tontines)));
  // Last: contract operations nobody answered yet.
  api.use(notImplementedFallback());
  app.use('/api', api);
}
