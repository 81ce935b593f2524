import type { Knex } from 'knex';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { findDemoOrganizationId, seedIdentity } from '../../src/db/seed/identity-seed';
import { DEMO_CUSTOMERS, seedInvoices } from '../../src/db/seed/invoices-seed';
import { seedNetworkStatus } from '../../src/db/seed/network-status-seed';
import { buildServices } from '../../src/services';
import { testConfig } from '../support/app';
import { testKnex } from '../support/database';

/** Runs the steps in a transaction that is always rolled back: the run's database keeps no demo rows. */
async function inRolledBackSeed(check: (trx: Knex.Transaction) => Promise<void>): Promise<void> {
  const knex = testKnex();
  const services = buildServices({ config: testConfig(), knex, logger: pino({ level: 'silent' }) });
  const trx = await knex.transaction();
  try {
    await seedIdentity(trx, services);
    await seedInvoices(trx, services);
    await seedNetworkStatus(trx, services);
    await check(trx);
  } finally {
    await trx.rollback();
    services.shutdown();
  }
}

describe('invoices and network-status demo seed steps', () => {
  it('give "Demo Trading SARL" customers, every kind in every status, and an audited open status', async () => {
    await inRolledBackSeed(async (trx) => {
      const orgId = await findDemoOrganizationId(trx);
      const customers = await trx('customers').where({ organization_id: orgId });
      expect(customers).toHaveLength(DEMO_CUSTOMERS.length);
      const rows = (await trx('documents').where({ organization_id: orgId }).select('kind', 'status')) as Array<{ kind: string; status: string }>;
      const pairs = new Set(rows.map((r) => `${r.kind}:${r.status}`));
      for (const pair of [
        'invoice:draft', 'invoice:open', 'invoice:paid', 'invoice:void', 'invoice:uncollectible',
        'quote:draft', 'quote:open', 'quote:accepted', 'quote:canceled',
        'credit_note:issued', 'credit_note:void',
      ]) {
        expect(pairs, pair).toContain(pair);
      }
      const status = await trx('organization_network_status').where({ organization_id: orgId }).first();
      expect(status).toMatchObject({ is_open: true, is_visible: true, version: 3 });
      const changes = await trx('network_status_changes').where({ organization_id: orgId }).orderBy('after_version');
      expect(changes.map((c: { after_version: number }) => c.after_version)).toEqual([1, 2, 3]);
    });
  });
});
