import { pageRequest, toListPage, type Handlers, type IdempotentResource } from '../../contract';
import { presentCustomer, presentDocument } from './invoice-presenter';
import type { DocumentView, InvoiceService } from './invoice-service';

/** The document a creation produced, as an Idempotency-Key replay names it. */
function documentResource(organizationId: string, doc: DocumentView): IdempotentResource {
  return { type: doc.kind, id: doc.id, status: doc.status, location: `/api/business/organizations/${organizationId}/invoices/${doc.id}` };
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
      const { documents } = await invoices.listDocuments(organization.id, { ...page, kind: query.kind, status: query.status, customerId: query.customer_id });
      // The page first, then only its documents presented (not the extra one that says more follow).
      const listed = toListPage(documents, page.limit);
      return { data: { ...listed, data: listed.data.map(presentDocument) } };
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
    finalizeInvoice: async ({ organization, path }) => ({ data: presentDocument(await invoices.finalize(organization.id, path.invoiceId)) }),
    payInvoice: async ({ organization, path }) => ({ data: presentDocument(await invoices.transition(organization.id, path.invoiceId, 'pay')) }),
    markInvoiceUncollectible: async ({ organization, path }) => ({
      data: presentDocument(await invoices.transition(organization.id, path.invoiceId, 'mark_uncollectible')),
    }),
    voidInvoice: async ({ organization, path }) => ({ data: presentDocument(await invoices.transition(organization.id, path.invoiceId, 'void')) }),
    cancelQuote: async ({ organization, path }) => ({ data: presentDocument(await invoices.transition(organization.id, path.invoiceId, 'cancel')) }),
    acceptQuote: async ({ organization, path, caller }) => ({ data: presentDocument(await invoices.acceptQuote(organization.id, path.invoiceId, caller.userId)) }),
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
    async createCustomer({ organization, body }) {
      const customer = await invoices.createCustomer(organization.id, { name: body.name, email: body.email, phone: body.phone });
      return { data: presentCustomer(customer) };
    },
  };
}
