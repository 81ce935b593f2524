import type { Knex } from 'knex';
import { InvoiceService } from '../modules/invoices';
import type { Services } from '../services';
import { DEMO_ORGANIZATION_NAME, DEMO_OTHER_ORGANIZATION_NAME, DEMO_USERS, findDemoOrganizationId, findDemoUserId } from './identity-seed';

export const DEMO_CUSTOMERS = [
  { name: 'Boutique Awa', email: 'compta@boutique-awa.example', phone: '+2250701020304' },
  { name: 'Sahel Logistique SA', email: 'factures@sahel-logistique.example', phone: null },
  { name: 'Kofi Mensah', email: null, phone: '+233201234567' },
] as const;

/** The demo open quote never expires, so it reads as open whatever the date the demo is run. */
export const DEMO_OPEN_QUOTE_EXPIRES_AT = new Date('9999-12-31T23:59:59.000Z');

/** The demo documents' history starts this long before the seed runs... */
const DEMO_HISTORY_MS = 10 * 86_400_000;
/** ...and each step of it (a creation, a finalisation, a payment) happens this much later. */
const DEMO_STEP_MS = 6 * 3_600_000;

/**
 * A clock for the demo history: every reading is one step later than the previous one,
 * starting DEMO_HISTORY_MS before `start`, so the documents get distinct creation and
 * transition times, in the order they were made, all in the past (never later than `start`).
 */
export function demoClock(start: Date, historyMs = DEMO_HISTORY_MS, stepMs = DEMO_STEP_MS): () => Date {
  let next = start.getTime() - historyMs;
  return () => {
    const at = new Date(Math.min(next, start.getTime()));
    next += stepMs;
    return at;
  };
}

const lines = (description: string, quantity: number, unitAmount: string, taxRateBps = 1800) => [
  { description, quantity, unit_amount: unitAmount, tax_rate_bps: taxRateBps },
];

/**
 * Seed step (after identity): "Demo Trading SARL" gets three customers and documents of every
 * kind in every status, made through the service (so numbers, totals and lifecycles are real):
 * invoices draft, open, paid, void, uncollectible; quotes draft, open, accepted (with its
 * draft invoice), canceled; credit notes issued and void. A demo clock gives them distinct,
 * ordered times over the last days; the open quote never expires. "Other Company SA" gets one
 * customer and one open invoice (foreign ids for the 404 cases).
 */
export async function seedInvoices(trx: Knex.Transaction, _services: Services): Promise<void> {
  // Bound to the seed's transaction: withTransaction joins it. The demo clock spreads the
  // documents over the last days instead of stamping them all with the seed's instant.
  const invoices = new InvoiceService(trx as unknown as Knex, { clock: demoClock(new Date()) });
  const orgId = await findDemoOrganizationId(trx, DEMO_ORGANIZATION_NAME);
  const ownerId = await findDemoUserId(trx, DEMO_USERS[0]!.email);
  const customers = [];
  for (const customer of DEMO_CUSTOMERS) customers.push(await invoices.createCustomer(trx, orgId, customer));
  const [awa, sahel, kofi] = customers as [(typeof customers)[number], (typeof customers)[number], (typeof customers)[number]];

  const draft = (kind: 'invoice' | 'quote', customerId: string, currency: string, lineItems: ReturnType<typeof lines>, expiresAt?: Date) =>
    invoices.createDocument(trx, orgId, ownerId, { kind, customerId, currency, lineItems, expiresAt });
  const open = async (kind: 'invoice' | 'quote', customerId: string, currency: string, lineItems: ReturnType<typeof lines>, expiresAt?: Date) =>
    invoices.finalize(trx, orgId, (await draft(kind, customerId, currency, lineItems, expiresAt)).id);

  // Invoices
  await draft('invoice', awa.id, 'XOF', lines('Display shelves (draft)', 4, '25000'));
  const openInvoice = await open('invoice', awa.id, 'XOF', lines('Monthly stock delivery', 10, '15000'));
  const paid = await open('invoice', sahel.id, 'EUR', lines('Freight consulting, October', 12, '85.50', 2000));
  await invoices.transition(trx, orgId, paid.id, 'pay');
  const voided = await open('invoice', kofi.id, 'XOF', lines('Duplicate order', 1, '50000'));
  await invoices.transition(trx, orgId, voided.id, 'void');
  const uncollectible = await open('invoice', sahel.id, 'XOF', lines('Warehouse rental, Q3', 3, '200000'));
  await invoices.transition(trx, orgId, uncollectible.id, 'mark_uncollectible');

  // Quotes
  await draft('quote', kofi.id, 'XOF', lines('Shop fitting (draft quote)', 1, '750000'));
  await open('quote', awa.id, 'XOF', lines('Point-of-sale terminals', 2, '120000'), DEMO_OPEN_QUOTE_EXPIRES_AT);
  const accepted = await open('quote', sahel.id, 'EUR', lines('Cold-chain audit', 1, '1450.00', 2000));
  const acceptance = await invoices.tryAcceptQuote(trx, orgId, accepted.id, ownerId);
  if ('refusal' in acceptance) throw acceptance.refusal;
  const canceled = await open('quote', kofi.id, 'XOF', lines('Delivery van hire', 5, '35000'));
  await invoices.transition(trx, orgId, canceled.id, 'cancel');

  // Credit notes: one issued against the open invoice, one issued then voided against the paid one.
  await invoices.createCreditNote(trx, orgId, openInvoice.id, ownerId, { reason: 'product_unsatisfactory', lineItems: lines('Two damaged crates', 2, '15000') });
  const mistaken = await invoices.createCreditNote(trx, orgId, paid.id, ownerId, { reason: 'duplicate', lineItems: lines('Hour billed twice', 1, '85.50', 2000) });
  await invoices.transition(trx, orgId, mistaken.id, 'void');

  const otherOrgId = await findDemoOrganizationId(trx, DEMO_OTHER_ORGANIZATION_NAME);
  const otherCustomer = await invoices.createCustomer(trx, otherOrgId, { name: 'Client of another company' });
  const other = await invoices.createDocument(trx, otherOrgId, ownerId, { kind: 'invoice', customerId: otherCustomer.id, currency: 'XOF', lineItems: lines('Service', 1, '10000') });
  await invoices.finalize(trx, otherOrgId, other.id);
}
