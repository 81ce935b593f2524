import { pageRequest, toRenderedListPage, type Handlers, type IdempotentResource } from '../../contract';
import { presentCustomer, presentDocument } from './invoice-presenter';
import type { DocumentView, InvoiceService } from './invoice-service';

/** The document a creation produced, as an Idempotency-Key replay names it. */
function documentResource(organizationId: string, doc: DocumentView): IdempotentResource {
  return { type: doc.kind, id: doc.id, status: doc.status, location: `/api/business/organizations/${organizationId}/invoices/${doc.id}` };
}

/** A document action's answer: the document, and the resource a replay of its key names. */
function changed(organizationId: string, doc: DocumentView) {
  return { data: presentDocument(doc), resource: documentResource(organizationId, doc) };
}

type InvoiceOperation =
  | 'listInvoices'
  | 'createInvoice'
  | 'getInvoice'
  | 'finalizeInvoice'
  | 'payInvoice'
  | 'markInvoiceUncollectible'
  | 'voidInvoice'
  | 'cancelQuote'
  | 'acceptQuote'
  | 'createCreditNote'
  | 'createCustomer';

/** Invoices, quotes, credit notes and customers (the organisation is the authorised one, never the path's). */
export function invoiceHandlers(invoices: InvoiceService): Handlers<InvoiceOperation> {
  return {
    async listInvoices({ organization, query }) {
      const page = pageRequest(query);
      const documents = await invoices.listDocuments(organization.id, { ...page, kind: query.kind, status: query.status, customerId: query.customer_id });
      // Rendered by the database as presentDocument presents a document (no row parsed here).
      return { data: toRenderedListPage(documents, page.limit) };
    },
    async createInvoice({ trx, organization, caller, body }) {
      const created = await invoices.createDocument(
        trx,
        organization.id,
        caller.userId,
        {
          kind: body.kind,
          customerId: body.customer_id,
          currency: body.currency,
          lineItems: body.line_items,
          memo: body.memo,
          dueDate: body.due_date,
          expiresAt: body.expires_at ? new Date(body.expires_at) : null,
        },
      );
      return { data: presentDocument(created), resource: documentResource(organization.id, created) };
    },
    getInvoice: async ({ organization, path }) => ({ data: presentDocument(await invoices.getDocument(organization.id, path.invoiceId)) }),
    finalizeInvoice: async ({ trx, organization, path }) => changed(organization.id, await invoices.finalize(trx, organization.id, path.invoiceId)),
    payInvoice: async ({ trx, organization, path }) => changed(organization.id, await invoices.transition(trx, organization.id, path.invoiceId, 'pay')),
    markInvoiceUncollectible: async ({ trx, organization, path }) =>
      changed(organization.id, await invoices.transition(trx, organization.id, path.invoiceId, 'mark_uncollectible')),
    voidInvoice: async ({ trx, organization, path }) => changed(organization.id, await invoices.transition(trx, organization.id, path.invoiceId, 'void')),
    cancelQuote: async ({ trx, organization, path }) => changed(organization.id, await invoices.transition(trx, organization.id, path.invoiceId, 'cancel')),
    async acceptQuote({ trx, organization, path, caller }) {
      const outcome = await invoices.tryAcceptQuote(trx, organization.id, path.invoiceId, caller.userId);
      // An expired quote is canceled and refused: the cancellation commits, the key stays free.
      return 'refusal' in outcome ? { refusal: outcome.refusal } : changed(organization.id, outcome.document);
    },
    async createCreditNote({ trx, organization, path, caller, body }) {
      const note = await invoices.createCreditNote(
        trx,
        organization.id,
        path.invoiceId,
        caller.userId,
        { reason: body.reason, lineItems: body.line_items, memo: body.memo },
      );
      return { data: presentDocument(note), resource: documentResource(organization.id, note) };
    },
    async createCustomer({ trx, organization, body }) {
      const customer = await invoices.createCustomer(trx, organization.id, { name: body.name, email: body.email, phone: body.phone });
      // A customer has no URL of its own: a replay names it without a Location.
      return { data: presentCustomer(customer), resource: { type: 'customer', id: customer.id, status: 'active', location: '' } };
    },
  };
}
