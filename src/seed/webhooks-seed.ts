import type { Knex } from 'knex';
import { insertDemoEndpoint } from '../modules/events';
import type { Services } from '../services';
import { DEMO_INACTIVE_ORGANIZATION_NAME, DEMO_LOCKED_ORGANIZATION_NAME, DEMO_ORGANIZATION_NAME, DEMO_OTHER_ORGANIZATION_NAME, findDemoOrganizationId } from './identity-seed';

/** Where a developer's local receiver listens (docs/integrators/webhooks-and-events.md, "Demo data"). */
export const DEMO_WEBHOOK_URL = 'http://127.0.0.1:4000/webhooks';

/**
 * Seed step (last): one disabled webhook endpoint per demo organisation at a local address,
 * with its queued `webhook_endpoint.test` delivery (sent once the endpoint is enabled). The
 * organisations' other demo events come from the invoice and payment-link steps.
 */
export async function seedWebhooks(trx: Knex.Transaction, _services: Services): Promise<void> {
  const now = new Date();
  for (const name of [DEMO_ORGANIZATION_NAME, DEMO_OTHER_ORGANIZATION_NAME, DEMO_LOCKED_ORGANIZATION_NAME, DEMO_INACTIVE_ORGANIZATION_NAME]) {
    await insertDemoEndpoint(trx, await findDemoOrganizationId(trx, name), DEMO_WEBHOOK_URL, now);
  }
}
