import { Router, type Request } from 'express';
import type { operations } from '../../../generated/openapi';
import { sendData, toListPage } from '../../http/envelope';
import { presentCustomer, presentDocument } from './invoice-presenter';
import type { InvoiceService } from './invoice-service';
import type { DocumentKind, DocumentStatus } from './invoice-types';

type ListQuery = NonNullable<operations['listInvoices']['parameters']['query']>;
type ListData = operations['listInvoices']['responses']['200']['content']['application/json']['data'];
type CreateBody = operations['createInvoice']['requestBody']['content']['application/json'];
type CreditNoteBody = operations['createCreditNote']['requestBody']['content']['application/json'];
type CustomerBody = operations['createCustomer']['requestBody']['content']['application/json'];

const ORG = '/business/organizations/:orgId';
const DOC = `${ORG}/invoices/:invoiceId`;

/** The organisation set by the access policy (never read from the path: it was authorised). */
function organizationId(req: Request): string {
  if (!req.organization) throw new Error('the organisation access policy did not run before an invoices route');
  return req.organization.id;
}

function userId(req: Request): string {
  if (!req.auth) throw new Error('no authenticated caller on an invoices route');
  return req.auth.userId;
}

const documentId = (req: Request): string => String(req.params.invoiceId);

/** The optional Idempotency-Key of a creation (its format was checked by the validator). */
const idempotencyKey = (req: Request): string | undefined => req.get('Idempotency-Key') || undefined;

/** Invoices, quotes, credit notes and customers (access rules: ACCESS_POLICY). */
export function invoiceRoutes(invoices: InvoiceService): Router {
  const router = Router();

  router.get(`${ORG}/invoices`, async (req, res) => {
    const query = req.query as ListQuery;
    const limit = query.limit ?? 50;
    const page = await invoices.listDocuments(organizationId(req), {
      kind: query.kind as DocumentKind | undefined,
      status: query.status as DocumentStatus | undefined,
      customerId: query.customer_id,
      limit,
      startingAfter: query.starting_after,
    });
    const data: ListData = toListPage(page.documents.map(presentDocument), limit);
    sendData(res, 200, data);
  });

  router.post(`${ORG}/invoices`, async (req, res) => {
    const body = req.body as CreateBody;
    const created = await invoices.createDocument(organizationId(req), userId(req), {
      kind: body.kind,
      customerId: body.customer_id,
      currency: body.currency,
      lineItems: body.line_items,
      memo: body.memo,
      dueDate: body.due_date,
      expiresAt: body.expires_at ? new Date(body.expires_at) : null,
    }, idempotencyKey(req));
    sendData(res, 201, presentDocument(created));
  });

  router.get(DOC, async (req, res) => {
    sendData(res, 200, presentDocument(await invoices.getDocument(organizationId(req), documentId(req))));
  });

  router.post(`${DOC}/finalize`, async (req, res) => {
    sendData(res, 200, presentDocument(await invoices.finalize(organizationId(req), documentId(req))));
  });

  router.post(`${DOC}/pay`, async (req, res) => {
    sendData(res, 200, presentDocument(await invoices.transition(organizationId(req), documentId(req), 'pay')));
  });

  router.post(`${DOC}/mark-uncollectible`, async (req, res) => {
    sendData(res, 200, presentDocument(await invoices.transition(organizationId(req), documentId(req), 'mark_uncollectible')));
  });

  router.post(`${DOC}/void`, async (req, res) => {
    sendData(res, 200, presentDocument(await invoices.transition(organizationId(req), documentId(req), 'void')));
  });

  router.post(`${DOC}/cancel`, async (req, res) => {
    sendData(res, 200, presentDocument(await invoices.transition(organizationId(req), documentId(req), 'cancel')));
  });

  router.post(`${DOC}/accept`, async (req, res) => {
    sendData(res, 200, presentDocument(await invoices.acceptQuote(organizationId(req), documentId(req), userId(req))));
  });

  router.post(`${DOC}/credit-notes`, async (req, res) => {
    const body = req.body as CreditNoteBody;
    const note = await invoices.createCreditNote(organizationId(req), documentId(req), userId(req), {
      reason: body.reason,
      lineItems: body.line_items,
      memo: body.memo,
    }, idempotencyKey(req));
    sendData(res, 201, presentDocument(note));
  });

  router.post(`${ORG}/customers`, async (req, res) => {
    const body = req.body as CustomerBody;
    const customer = await invoices.createCustomer(organizationId(req), { name: body.name, email: body.email, phone: body.phone });
    sendData(res, 201, presentCustomer(customer));
  });

  return router;
}
