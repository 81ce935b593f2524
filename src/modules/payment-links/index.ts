/** Public face of the payment-links module: Checkout, payment links, payments and the payment page's rules. */
export { PaymentLinksService } from './payment-links-service';
export { PaymentsService } from './payments-service';
export { paymentLinksHandlers } from './payment-links-handlers';
