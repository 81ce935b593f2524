import { pageRequest, toListPage, type Handlers, type IdempotentResource } from '../../contract';
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

/** The link a request created or changed, as an Idempotency-Key replay names it. */
function linkResource(organizationId: string, link: { id: string; status: string }): IdempotentResource {
  return { type: 'payment_link', id: link.id, status: link.status, location: `/api/business/organizations/${organizationId}/payment-links/${link.id}` };
}

/** Checkout, payment links and the payment status API (the organisation is the authorised one). */
export function paymentLinksHandlers(paymentLinks: PaymentLinksService, payments: PaymentsService, payUrl: string): Handlers<PaymentLinkOperation> {
  const link = (value: Parameters<typeof presentLink>[0]) => presentLink(value, payUrl);
  return {
    async getOrCreateCheckout({ trx, organization, caller, body }) {
      const checkout = await paymentLinks.getOrCreateCheckout(
        organization.id,
        caller.userId,
        { destinationAccountId: body.destination_account_id, requireSignedAmount: body.require_signed_amount },
        trx,
      );
      return { data: link(checkout), resource: linkResource(organization.id, checkout) };
    },
    async listPaymentLinks({ organization, query }) {
      const page = pageRequest(query);
      const rows = await paymentLinks.listLinks(organization.id, { ...page, kind: query.kind });
      return { data: toListPage(rows.map(link), page.limit) };
    },
    async createPaymentLink({ trx, organization, caller, body }) {
      const input = {
        destinationAccountId: body.destination_account_id,
        amount: body.amount,
        minimumAmount: body.minimum_amount,
        maximumAmount: body.maximum_amount,
        description: body.description,
        reference: body.reference,
        expiresAt: body.expires_at,
        requireSignedAmount: body.require_signed_amount,
      };
      const created = await paymentLinks.createLink(trx, organization.id, caller.userId, input);
      return { data: link(created), resource: linkResource(organization.id, created) };
    },
    getPaymentLink: async ({ organization, path }) => ({ data: link(await paymentLinks.getLink(organization.id, path.linkId)) }),
    async deactivatePaymentLink({ trx, organization, path }) {
      const deactivated = await paymentLinks.deactivate(trx, organization.id, path.linkId);
      return { data: link(deactivated), resource: linkResource(organization.id, deactivated) };
    },
    // Signing writes nothing: a replay of its key names the link the URL was signed for. The
    // link is read in the key's transaction (no second connection while it holds one).
    async createSignedPaymentLink({ trx, organization, path, body }) {
      const input = { amount: body.amount, reference: body.reference, expiresInSeconds: body.expires_in_seconds };
      const signed = await paymentLinks.signAmount(trx, organization.id, path.linkId, input);
      return { data: presentSignedLink(signed), headers: { 'Cache-Control': 'no-store' }, resource: linkResource(organization.id, signed.link) };
    },
    async listPayments({ organization, query }) {
      const page = pageRequest(query);
      const rows = await payments.list(organization.id, { ...page, linkId: query.link_id, reference: query.reference, status: query.status });
      return { data: toListPage(rows.map(presentPayment), page.limit) };
    },
    getPayment: async ({ organization, path }) => ({ data: presentPayment(await payments.get(organization.id, path.paymentId)) }),
  };
}
