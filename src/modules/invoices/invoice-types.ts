/** Billing documents: invoices, quotes and credit notes, and their customers. */

export const DOCUMENT_KINDS = ['invoice', 'quote', 'credit_note'] as const;
export type DocumentKind = (typeof DOCUMENT_KINDS)[number];

export type InvoiceStatus = 'draft' | 'open' | 'paid' | 'void' | 'uncollectible';
export type QuoteStatus = 'draft' | 'open' | 'accepted' | 'canceled';
export type CreditNoteStatus = 'issued' | 'void';
export type DocumentStatus = InvoiceStatus | QuoteStatus | CreditNoteStatus;

/** The statuses each kind can be in (Stripe's lifecycles). */
export const STATUSES_BY_KIND: Readonly<Record<DocumentKind, readonly DocumentStatus[]>> = {
  invoice: ['draft', 'open', 'paid', 'void', 'uncollectible'],
  quote: ['draft', 'open', 'accepted', 'canceled'],
  credit_note: ['issued', 'void'],
};

export const CREDIT_NOTE_REASONS = ['duplicate', 'fraudulent', 'order_change', 'product_unsatisfactory'] as const;
export type CreditNoteReason = (typeof CREDIT_NOTE_REASONS)[number];

/** Number prefixes: INV-2026-000042, QUO-2026-000007, CN-2026-000003. */
export const NUMBER_PREFIX: Readonly<Record<DocumentKind, string>> = { invoice: 'INV', quote: 'QUO', credit_note: 'CN' };

export function formatDocumentNumber(kind: DocumentKind, year: number, sequence: number): string {
  return `${NUMBER_PREFIX[kind]}-${year}-${String(sequence).padStart(6, '0')}`;
}

export interface LineItem {
  description: string;
  quantity: number;
  unitAmountMinor: bigint;
  /** Tax rate in basis points (1800 = 18 %). */
  taxRateBps: number;
  /** quantity x unit amount. */
  amountMinor: bigint;
  /** The line's tax, rounded half up to the minor unit. */
  taxMinor: bigint;
}

export interface StatusTransitions {
  finalizedAt: Date | null;
  paidAt: Date | null;
  voidedAt: Date | null;
  markedUncollectibleAt: Date | null;
  acceptedAt: Date | null;
  canceledAt: Date | null;
}

export interface BillingDocument {
  id: string;
  organizationId: string;
  kind: DocumentKind;
  status: DocumentStatus;
  number: string | null;
  customerId: string | null;
  currency: string;
  lineItems: LineItem[];
  subtotalMinor: bigint;
  taxMinor: bigint;
  totalMinor: bigint;
  /** Invoices: the sum of the issued credit notes. */
  creditedMinor: bigint;
  memo: string | null;
  /** YYYY-MM-DD */
  issueDate: string | null;
  dueDate: string | null;
  expiresAt: Date | null;
  invoiceId: string | null;
  creditReason: CreditNoteReason | null;
  transitions: StatusTransitions;
  createdAt: Date;
  updatedAt: Date;
}

export interface Customer {
  id: string;
  organizationId: string;
  name: string;
  email: string | null;
  phone: string | null;
  createdAt: Date;
}

/** What an invoice still asks for: nothing once paid or void, the total less credits otherwise. */
export function amountDue(doc: Pick<BillingDocument, 'kind' | 'status' | 'totalMinor' | 'creditedMinor'>): bigint {
  if (doc.kind !== 'invoice') return 0n;
  if (doc.status === 'paid' || doc.status === 'void') return 0n;
  return doc.totalMinor - doc.creditedMinor;
}
