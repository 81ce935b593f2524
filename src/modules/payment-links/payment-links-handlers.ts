import { pageRequest, toListPage, type Handlers } from '../../contract';
import { presentLink, presentPayment, presentSignedLink } from './payment-links-presenter';
import type { PaymentLinksService } from './payment-links-service';
import type { PaymentsService } from './payments-service';

type PaymentLinkOperation =
  | 'getOrCreateCheckout'
  | 'listPaymentLinks'
  | 'createPaymentLink'
  | 'getPaymentLink'
  | 'deactivatePaymentLink'
  | 'createSignedPaymentLink'
  | 'listPayments'
  | 'getPayment';

/** Checkout, payment links and the payment status API (the organisation is the authorised one). */
export function paymentLinksHandlers(paymentLinks: PaymentLinksService, payments: PaymentsService, payUrl: string): Handlers<PaymentLinkOperation> {
  const link = (value: Parameters<typeof presentLink>[0]) => presentLink(value, payUrl);
  return {
    async getOrCreateCheckout({ organization, caller, body }) {
      const checkout = await paymentLinks.getOrCreateCheckout(organization.id, caller.userId, {
        destinationAccountId: body.destination_account_id,
        requireSignedAmount: body.require_signed_amount,
      });
      return { data: link(checkout) };
    },
    async listPaymentLinks({ organization, query }) {
      const page = pageRequest(query);
      const rows = await paymentLinks.listLinks(organization.id, { ...page, kind: query.kind });
      return { data: toListPage(rows.map(link), page.limit) };
    },
    async createPaymentLink({ organization, caller, body }) {
      const created = await paymentLinks.createLink(organization.id, caller.userId, {
        destinationAccountId: body.destination_account_id,
        amount: body.amount,
        minimumAmount: body.minimum_amount,
        maximumAmount: body.maximum_amount,
        description: body.description,
        reference: body.reference,
        expiresAt: body.expires_at,
        requireSignedAmount: body.require_signed_amount,
      });
      return { data: link(created) };
    },
    getPaymentLink: async ({ organization, path }) => ({ data: link(await paymentLinks.getLink(organization.id, path.linkId)) }),
    deactivatePaymentLink: async ({ organization, path }) => ({ data: link(await paymentLinks.deactivate(organization.id, path.linkId)) }),
    async createSignedPaymentLink({ organization, path, body }) {
      const signed = await paymentLinks.signAmount(organization.id, path.linkId, {
        amount: body.amount,
        reference: body.reference,
        expiresInSeconds: body.expires_in_seconds,
      });
      return { data: presentSignedLink(signed), headers: { 'Cache-Control': 'no-store' } };
    },
    async listPayments({ organization, query }) {
      const page = pageRequest(query);
      const rows = await payments.list(organization.id, { ...page, linkId: query.link_id, reference: query.reference, status: query.status });
      return { data: toListPage(rows.map(presentPayment), page.limit) };
    },
    getPayment: async ({ organization, path }) => ({ data: presentPayment(await payments.get(organization.id, path.paymentId)) }),
  };
}
