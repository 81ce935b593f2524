import type { Knex } from 'knex';
import type { Services } from '../services';
import { DEMO_ORGANIZATION_NAME, DEMO_USERS, findDemoOrganizationId, findDemoUserId } from './identity-seed';

/** What the seed hands back to the start-up (printed once on a terminal, never logged). */
export interface SeedReport {
  /** The demo organisation's API key, shown once like any key's secret. */
  demoApiKey?: { organization: string; secret: string };
}

/**
 * One API key of "Demo Trading SARL", created by its owner through the service (so
 * only its hash is stored and the event api_key.created is written). Its secret is random and
 * exists only in the report: `make run` prints it once on a fresh embedded database.
 */
export async function seedApiKeys(trx: Knex.Transaction, services: Services, report: SeedReport): Promise<void> {
  const organizationId = await findDemoOrganizationId(trx);
  const ownerId = await findDemoUserId(trx, DEMO_USERS[0]!.email);
  const key = await services.apiKeys.create(trx, organizationId, ownerId, {
    name: 'Demo shop server',
    scopes: ['payment_links:write', 'payments:read', 'invoices:write', 'accounts:read', 'network_status:read'],
  });
  report.demoApiKey = { organization: DEMO_ORGANIZATION_NAME, secret: key.secret };
}
