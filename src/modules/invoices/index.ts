/** Public face of the invoices module: invoices, quotes, credit notes and customers. */
export { InvoiceService } from './invoice-service';
export { invoiceHandlers } from './invoice-handlers';
