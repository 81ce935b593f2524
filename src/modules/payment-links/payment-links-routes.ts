import { Router, type Request } from 'express';
import type { operations } from '../../../generated/openapi';
import { sendData, toListPage } from '../../http/envelope';
import { presentLink, presentPayment, presentSignedLink } from './payment-links-presenter';
import type { PaymentLinksService } from './payment-links-service';
import type { PaymentsService } from './payments-service';

type CheckoutBody = operations['getOrCreateCheckout']['requestBody']['content']['application/json'];
type CreateLinkBody = operations['createPaymentLink']['requestBody']['content']['application/json'];
type SignBody = operations['createSignedPaymentLink']['requestBody']['content']['application/json'];
type ListLinksQuery = NonNullable<operations['listPaymentLinks']['parameters']['query']>;
type ListPaymentsQuery = NonNullable<operations['listPayments']['parameters']['query']>;
type LinkData = operations['getPaymentLink']['responses']['200']['content']['application/json']['data'];
type LinkListData = operations['listPaymentLinks']['responses']['200']['content']['application/json']['data'];
type SignedData = operations['createSignedPaymentLink']['responses']['200']['content']['application/json']['data'];
type PaymentData = operations['getPayment']['responses']['200']['content']['application/json']['data'];
type PaymentListData = operations['listPayments']['responses']['200']['content']['application/json']['data'];

export interface PaymentLinkRouteDeps {
  paymentLinks: PaymentLinksService;
  payments: PaymentsService;
  payUrl: string;
}

const ORG = '/business/organizations/:orgId';

/** The organisation set by the access policy (never from the path: it was authorised). */
function organizationId(req: Request): string {
  if (!req.organization) throw new Error('the organisation access policy did not run before a payment-links route');
  return req.organization.id;
}

function userId(req: Request): string {
  if (!req.auth) throw new Error('no authenticated caller on a payment-links route');
  return req.auth.userId;
}

/** Checkout, payment links and the payment status API (access rules: ACCESS_POLICY). */
export function paymentLinksRoutes(deps: PaymentLinkRouteDeps): Router {
  const router = Router();
  const link = (value: Parameters<typeof presentLink>[0]): LinkData => presentLink(value, deps.payUrl);

  router.post(`${ORG}/checkout`, async (req, res) => {
    const body = req.body as CheckoutBody;
    const checkout = await deps.paymentLinks.getOrCreateCheckout(organizationId(req), userId(req), {
      destinationAccountId: body.destination_account_id,
      requireSignedAmount: body.require_signed_amount,
    });
    sendData(res, 200, link(checkout));
  });

  router.get(`${ORG}/payment-links`, async (req, res) => {
    const query = req.query as ListLinksQuery;
    const limit = query.limit ?? 50;
    const rows = await deps.paymentLinks.listLinks(organizationId(req), { kind: query.kind, limit, startingAfter: query.starting_after });
    const data: LinkListData = toListPage(rows.map(link), limit);
    sendData(res, 200, data);
  });

  router.post(`${ORG}/payment-links`, async (req, res) => {
    const body = req.body as CreateLinkBody;
    const created = await deps.paymentLinks.createLink(organizationId(req), userId(req), {
      destinationAccountId: body.destination_account_id,
      amount: body.amount,
      minimumAmount: body.minimum_amount,
      maximumAmount: body.maximum_amount,
      description: body.description,
      reference: body.reference,
      expiresAt: body.expires_at,
      requireSignedAmount: body.require_signed_amount,
    });
    sendData(res, 201, link(created));
  });

  router.get(`${ORG}/payment-links/:linkId`, async (req, res) => {
    sendData(res, 200, link(await deps.paymentLinks.getLink(organizationId(req), String(req.params.linkId))));
  });

  router.post(`${ORG}/payment-links/:linkId/deactivate`, async (req, res) => {
    sendData(res, 200, link(await deps.paymentLinks.deactivate(organizationId(req), String(req.params.linkId))));
  });

  router.post(`${ORG}/payment-links/:linkId/signed-links`, async (req, res) => {
    const body = req.body as SignBody;
    const signed = await deps.paymentLinks.signAmount(organizationId(req), String(req.params.linkId), {
      amount: body.amount,
      reference: body.reference,
      expiresInSeconds: body.expires_in_seconds,
    });
    const data: SignedData = presentSignedLink(signed);
    res.setHeader('Cache-Control', 'no-store');
    sendData(res, 200, data);
  });

  router.get(`${ORG}/payments`, async (req, res) => {
    const query = req.query as ListPaymentsQuery;
    const limit = query.limit ?? 50;
    const rows = await deps.payments.list(organizationId(req), {
      linkId: query.link_id,
      reference: query.reference,
      status: query.status,
      limit,
      startingAfter: query.starting_after,
    });
    const data: PaymentListData = toListPage(rows.map(presentPayment), limit);
    sendData(res, 200, data);
  });

  router.get(`${ORG}/payments/:paymentId`, async (req, res) => {
    const data: PaymentData = presentPayment(await deps.payments.get(organizationId(req), String(req.params.paymentId)));
    sendData(res, 200, data);
  });

  return router;
}
