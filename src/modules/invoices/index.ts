/** Public face of the invoices module: invoices, quotes, credit notes and customers. */
export { InvoiceService } from './invoice-service';
export { invoiceHandlers } from './invoice-handlers';
export { presentDocument } from './invoice-presenter';
export { computeTotals, taxOf } from './invoice-amounts';
export { LIFECYCLE, nextStatus } from './invoice-lifecycle';
export { STATUSES_BY_KIND, amountDue, formatDocumentNumber, type DocumentKind } from './invoice-types';
export { documentListStatement } from './invoice-repository';
