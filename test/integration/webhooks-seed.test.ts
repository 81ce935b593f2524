import { describe, expect, it } from 'vitest';
import { seedOrganizationAccounts } from '../../src/seed/accounts-seed';
import { DEMO_INACTIVE_ORGANIZATION_NAME, DEMO_LOCKED_ORGANIZATION_NAME, DEMO_ORGANIZATION_NAME, DEMO_OTHER_ORGANIZATION_NAME, findDemoOrganizationId, seedIdentity } from '../../src/seed/identity-seed';
import { seedInvoices } from '../../src/seed/invoices-seed';
import { DEMO_WEBHOOK_URL, seedWebhooks } from '../../src/seed/webhooks-seed';
import { inRolledBackSeed } from '../support/seed';

describe('webhooks demo seed step', () => {
  it('gives each demo organisation one disabled endpoint at a local address, and the demo organisation a handful of events (rolled back afterwards)', async () => {
    await inRolledBackSeed([seedIdentity, seedOrganizationAccounts, seedInvoices, seedWebhooks], async (trx) => {
      const orgId = await findDemoOrganizationId(trx);
      // The run's database is shared: only the demo organisations' rows are looked at.
      const demoOrgs: string[] = [];
      for (const name of [DEMO_ORGANIZATION_NAME, DEMO_OTHER_ORGANIZATION_NAME, DEMO_LOCKED_ORGANIZATION_NAME, DEMO_INACTIVE_ORGANIZATION_NAME]) demoOrgs.push(await findDemoOrganizationId(trx, name));
      const endpoints = (await trx('webhook_endpoints').whereIn('organization_id', demoOrgs).select('organization_id', 'url', 'status', 'secret')) as Array<{ organization_id: string; url: string; status: string; secret: string }>;
      expect(endpoints).toHaveLength(4);
      expect(new Set(endpoints.map((e) => e.organization_id)).size).toBe(4);
      expect(endpoints.every((e) => e.url === DEMO_WEBHOOK_URL && e.status === 'disabled' && e.secret.startsWith('whsec_'))).toBe(true);
      const events = (await trx('events').where({ organization_id: orgId }).select('type', 'data')) as Array<{ type: string; data: { object: unknown } | null }>;
      expect(events.length).toBeGreaterThanOrEqual(5);
      expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['invoice.created', 'invoice.finalized', 'webhook_endpoint.test']));
      expect(events.every((e) => e.data !== null && e.data.object !== null)).toBe(true);
      // Nothing is due to a disabled endpoint: the dispatcher would claim none of its deliveries.
      const due = await trx('webhook_deliveries as d').join('webhook_endpoints as w', 'w.id', 'd.endpoint_id').whereIn('d.organization_id', demoOrgs).where('w.status', 'enabled');
      expect(await trx('webhook_deliveries').whereIn('organization_id', demoOrgs)).toHaveLength(4);
      expect(due).toEqual([]);
    });
  });
});
