import crypto from 'node:crypto';
import { testKnex } from './database';

export interface TestCustomer {
  id: string;
  organization_id: string;
  name: string;
}

export async function createCustomer(org: { id: string }, overrides: { name?: string; email?: string | null } = {}): Promise<TestCustomer> {
  const [row] = await testKnex()('customers')
    .insert({ organization_id: org.id, name: overrides.name ?? `Customer ${crypto.randomUUID().slice(0, 8)}`, email: overrides.email ?? null })
    .returning(['id', 'organization_id', 'name']);
  return row as TestCustomer;
}

export interface TestDocument {
  id: string;
  kind: string;
  status: string;
  number: string | null;
  customer_id: string | null;
}

let sequence = 0;

/**
 * A document row straight in the table (for list tests): a draft unless told otherwise; a
 * non-draft gets a unique test number. Amounts are bigint minor units given as strings.
 */
export async function createDocument(
  org: { id: string },
  overrides: {
    kind?: 'invoice' | 'quote' | 'credit_note';
    status?: string;
    customerId?: string | null;
    currency?: string;
    total?: string;
    invoiceId?: string;
    createdAt?: Date;
  } = {},
): Promise<TestDocument> {
  const kind = overrides.kind ?? 'invoice';
  const status = overrides.status ?? (kind === 'credit_note' ? 'issued' : 'draft');
  const prefix = { invoice: 'INV', quote: 'QUO', credit_note: 'CN' }[kind];
  sequence += 1;
  const number = status === 'draft' ? null : `${prefix}-1999-${String(crypto.randomInt(1, 999_999_999)).padStart(9, '0')}`;
  const total = overrides.total ?? '1000';
  const [row] = await testKnex()('documents')
    .insert({
      organization_id: org.id,
      kind,
      status,
      number,
      customer_id: overrides.customerId ?? null,
      currency: overrides.currency ?? 'XOF',
      line_items: JSON.stringify([{ description: `Line ${sequence}`, quantity: 1, unit_amount_minor: total, tax_rate_bps: 0, amount_minor: total, tax_minor: '0' }]),
      subtotal_minor: total,
      tax_minor: '0',
      total_minor: total,
      invoice_id: overrides.invoiceId ?? null,
      credit_reason: kind === 'credit_note' ? 'duplicate' : null,
      created_at: overrides.createdAt ?? new Date(),
    })
    .returning(['id', 'kind', 'status', 'number', 'customer_id']);
  return row as TestDocument;
}
