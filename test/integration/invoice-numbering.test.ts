import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock';
import { InvoiceRepository } from '../../src/modules/invoices/invoice-repository';
import { InvoiceService } from '../../src/modules/invoices';
import { testKnex } from '../support/database';
import { createMember, createOrganization } from '../support/factories';
import { createCustomer } from '../support/invoice-factories';

const line = { description: 'Service', quantity: 1, unit_amount: '1000' };
const invoiceService = (clock?: Clock) => new InvoiceService(testKnex(), { clock });

describe('document numbering', () => {
  it('assigns gapless, unique numbers to concurrent finalisations of one organisation and kind', async () => {
    const service = invoiceService();
    const org = await createOrganization();
    const user = await createMember(org, 'owner');
    const customer = await createCustomer(org);
    const drafts = await Promise.all(
      Array.from({ length: 40 }, () => service.createDocument(testKnex(), org.id, user.id, { kind: 'invoice', customerId: customer.id, currency: 'XOF', lineItems: [line] })),
    );
    const finalized = await Promise.all(drafts.map((d) => service.finalize(testKnex(), org.id, d.id)));
    const year = new Date().getUTCFullYear();
    const numbers = finalized.map((d) => d.number).sort();
    expect(numbers).toEqual(Array.from({ length: 40 }, (_, i) => `INV-${year}-${String(i + 1).padStart(6, '0')}`));
  });

  it('a finalisation that fails after taking a number gives it back (the counter rolls back with it): no gap', async () => {
    const service = invoiceService();
    const org = await createOrganization();
    const user = await createMember(org, 'owner');
    const customer = await createCustomer(org);
    const year = new Date().getUTCFullYear();
    const a = await service.createDocument(testKnex(), org.id, user.id, { kind: 'quote', customerId: customer.id, currency: 'XOF', lineItems: [line] });
    expect((await service.finalize(testKnex(), org.id, a.id)).number).toBe(`QUO-${year}-000001`);
    // A transaction that took the next number and then failed.
    await expect(
      testKnex().transaction(async (trx) => {
        expect(await new InvoiceRepository(trx).nextNumber(org.id, 'quote', year, 999_999_999)).toBe(2);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    // A refused finalisation (expired quote) takes none either.
    const b = await service.createDocument(testKnex(), org.id, user.id, { kind: 'quote', customerId: customer.id, currency: 'XOF', lineItems: [line], expiresAt: new Date(Date.now() + 60_000) });
    const late = invoiceService(() => new Date(Date.now() + 120_000));
    await expect(late.finalize(testKnex(), org.id, b.id)).rejects.toMatchObject({ code: 'QuoteExpired' });
    const c = await service.createDocument(testKnex(), org.id, user.id, { kind: 'quote', customerId: customer.id, currency: 'XOF', lineItems: [line] });
    expect((await service.finalize(testKnex(), org.id, c.id)).number).toBe(`QUO-${year}-000002`);
  });

  it('keeps separate sequences per organisation', async () => {
    const service = invoiceService();
    const year = new Date().getUTCFullYear();
    for (let i = 0; i < 2; i += 1) {
      const org = await createOrganization();
      const user = await createMember(org, 'owner');
      const customer = await createCustomer(org);
      const doc = await service.createDocument(testKnex(), org.id, user.id, { kind: 'invoice', customerId: customer.id, currency: 'XOF', lineItems: [line] });
      expect((await service.finalize(testKnex(), org.id, doc.id)).number).toBe(`INV-${year}-000001`);
    }
  });

  it('the database refuses a duplicate number even if a caller bypassed the counter', async () => {
    const org = await createOrganization();
    const row = { organization_id: org.id, kind: 'invoice', status: 'open', number: 'INV-2026-000001', currency: 'XOF' };
    await testKnex()('documents').insert(row);
    await expect(testKnex()('documents').insert(row)).rejects.toMatchObject({ code: '23505' });
  });
});
