import type { components } from '../../contract';
import { formatMinor } from '../ledger';
import { amountDue, type BillingDocument, type Customer } from './invoice-types';

/** A document with its currency's exponent (the service's DocumentView). */
type DocumentView = BillingDocument & { exponent: number };

type InvoiceData = components['schemas']['Invoice'];
type CustomerData = components['schemas']['Customer'];

const iso = (date: Date | null): string | null => (date ? date.toISOString() : null);

/** The contract's Invoice: amounts as exact decimal strings in major units (from bigint minor units). */
export function presentDocument(doc: DocumentView): InvoiceData {
  const money = (minor: bigint) => formatMinor(minor, doc.exponent);
  return {
    id: doc.id,
    kind: doc.kind,
    number: doc.number,
    status: doc.status,
    customer_id: doc.customerId,
    currency: doc.currency,
    line_items: doc.lineItems.map((line) => ({
      description: line.description,
      quantity: line.quantity,
      unit_amount: money(line.unitAmountMinor),
      tax_rate_bps: line.taxRateBps,
      amount: money(line.amountMinor),
      tax: money(line.taxMinor),
    })),
    subtotal: money(doc.subtotalMinor),
    tax: money(doc.taxMinor),
    total: money(doc.totalMinor),
    amount_due: money(amountDue(doc)),
    amount_credited: money(doc.creditedMinor),
    memo: doc.memo,
    issue_date: doc.issueDate,
    due_date: doc.dueDate,
    expires_at: iso(doc.expiresAt),
    invoice_id: doc.invoiceId,
    credit_reason: doc.creditReason,
    status_transitions: {
      finalized_at: iso(doc.transitions.finalizedAt),
      paid_at: iso(doc.transitions.paidAt),
      voided_at: iso(doc.transitions.voidedAt),
      marked_uncollectible_at: iso(doc.transitions.markedUncollectibleAt),
      accepted_at: iso(doc.transitions.acceptedAt),
      canceled_at: iso(doc.transitions.canceledAt),
    },
    created_at: doc.createdAt.toISOString(),
    updated_at: doc.updatedAt.toISOString(),
  };
}

export function presentCustomer(customer: Customer): CustomerData {
  return { id: customer.id, name: customer.name, email: customer.email, phone: customer.phone, created_at: customer.createdAt.toISOString() };
}
