/** Public face of the payment-links module: Checkout, payment links, payments and the payment page's rules. */
export { PaymentLinksService } from './payment-links-service';
export { PaymentsService, findPaymentView } from './payments-service';
export { paymentLinksHandlers } from './payment-links-handlers';
export { FORM_TOKEN_TTL_SECONDS, PaymentPageError, PaymentPageService, type PaymentForm, type PaymentPageProblem, type PaymentReceipt } from './payment-page-service';
export { PaymentRefused } from './payment-links-errors';
export { escapeHtml, formatMoney } from './payment-links-presenter';
export type { Payment, PaymentLink } from './payment-links-types';
export { insertDemoLinks } from './demo-links';
export { signAmount } from './link-security';
export { paymentLinkSnapshot } from './payment-link-snapshot';
export { paymentJobs } from './payment-jobs';
