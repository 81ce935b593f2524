import { describe, expect, it } from 'vitest';
import { findDemoOrganizationId, seedIdentity } from '../../src/seed/identity-seed';
import { DEMO_CUSTOMERS, DEMO_OPEN_QUOTE_EXPIRES_AT, demoClock, seedInvoices } from '../../src/seed/invoices-seed';
import { InvoiceService } from '../../src/modules/invoices';
import { seedNetworkStatus } from '../../src/seed/network-status-seed';
import { inRolledBackSeed } from '../support/seed';

describe('invoices and network-status demo seed steps', () => {
  it('give "Demo Trading SARL" customers, every kind in every status, and an audited open status', async () => {
    await inRolledBackSeed([seedIdentity, seedInvoices, seedNetworkStatus], async (trx) => {
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

  it('stamp the demo documents with distinct past times, in the order they were made (a demo clock)', async () => {
    const seededAt = Date.now();
    await inRolledBackSeed([seedIdentity, seedInvoices, seedNetworkStatus], async (trx) => {
      const orgId = await findDemoOrganizationId(trx);
      const rows = (await trx('documents').where({ organization_id: orgId }).select('number', 'kind', 'created_at', 'finalized_at')) as Array<{
        number: string | null;
        kind: string;
        created_at: Date;
        finalized_at: Date | null;
      }>;
      const times = rows.map((r) => r.created_at.getTime());
      expect(new Set(times).size).toBe(rows.length);
      for (const row of rows) {
        expect(row.created_at.getTime()).toBeLessThanOrEqual(seededAt + 1000);
        expect(row.created_at.getTime()).toBeGreaterThan(seededAt - 11 * 86_400_000);
        if (row.finalized_at) expect(row.finalized_at.getTime()).toBeGreaterThanOrEqual(row.created_at.getTime());
      }
      // Numbers follow creation order within a kind (made one after another).
      for (const kind of ['invoice', 'quote', 'credit_note']) {
        const numbered = rows.filter((r) => r.kind === kind && r.number).sort((a, b) => a.created_at.getTime() - b.created_at.getTime());
        expect(numbered.map((r) => r.number)).toEqual(numbered.map((r) => r.number).sort());
      }
    });
  });

  it('keep the demo open quote open whatever the date', async () => {
    await inRolledBackSeed([seedIdentity, seedInvoices, seedNetworkStatus], async (trx) => {
      const orgId = await findDemoOrganizationId(trx);
      const quotes = await trx('documents').where({ organization_id: orgId, kind: 'quote', status: 'open' }).select('id', 'expires_at');
      expect(quotes).toHaveLength(1);
      expect(quotes[0].expires_at).toEqual(DEMO_OPEN_QUOTE_EXPIRES_AT);
      for (const asOf of [new Date(), new Date('2100-01-01T00:00:00Z'), new Date('9999-12-31T00:00:00Z')]) {
        // The service's list, read inside the rolled-back seed with its clock at `asOf`.
        const invoices = new InvoiceService(trx, { clock: () => asOf });
        const open = await invoices.listDocuments(orgId, { kind: 'quote', status: 'open', limit: 10 });
        expect(open.map((row) => JSON.parse(row.json) as { id: string; status: string }).map((d) => [d.id, d.status]), asOf.toISOString()).toEqual([[quotes[0].id, 'open']]);
      }
    });
  });
});

describe('demo clock', () => {
  it('reads one step later each time, from the history start, never past the start instant', () => {
    const start = new Date('2026-11-22T12:00:00Z');
    const clock = demoClock(start, 3 * 3_600_000, 3_600_000);
    expect([clock(), clock(), clock(), clock(), clock()].map((d) => d.toISOString())).toEqual([
      '2026-11-22T09:00:00.000Z',
      '2026-11-22T10:00:00.000Z',
      '2026-11-22T11:00:00.000Z',
      '2026-11-22T12:00:00.000Z',
      '2026-11-22T12:00:00.000Z',
    ]);
  });
});
