import type { Handlers } from '../../contract';
import { refundResource, withRefunds, type RefundService } from './refund-service';

type RefundOperation = 'createPaymentRefund' | 'listPaymentRefunds';

/** The refund operations on the one write path: the key is claimed in the read that locks the payment. */
export const refundWritePath = ['createPaymentRefund'] as const satisfies readonly RefundOperation[];

export function refundHandlers(refunds: RefundService): Handlers<RefundOperation> {
  return {
    async createPaymentRefund({ trx, organization, caller, path, body }) {
      const created = await refunds.create(trx, organization.id, path.paymentId, { amount: body.amount, reason: body.reason }, caller.apiKey ? null : caller.userId);
      // The rail is asked once the refund (and its hold) has committed.
      const afterCommit = async () => ({ status: 201 as const, data: await created.settle() });
      return { status: 201, data: created.view, resource: refundResource(created.refund), afterCommit };
    },
    listPaymentRefunds: async ({ organization, path }) => {
      const data = await refunds.list(organization.id, path.paymentId);
      return { data: { object: 'list' as const, data, has_more: false, next_cursor: null } };
    },
  };
}

type PaymentHandlers = Pick<Handlers<'getPayment' | 'listPayments'>, 'getPayment' | 'listPayments'>;
type ShownPayment = { id: string; amount_minor: string };

/** The payment operations with what was refunded of each payment: `amount_refunded_minor` and its `refunds`. */
export function paymentsWithRefunds<H extends PaymentHandlers>(handlers: H, refunds: RefundService): H {
  return {
    ...handlers,
    async getPayment(input) {
      const result = await handlers.getPayment(input);
      const payment = result.data as unknown as ShownPayment;
      const found = await refunds.ofPayments([payment]);
      return { ...result, data: withRefunds(payment, found.get(payment.id) ?? []) } as typeof result;
    },
    async listPayments(input) {
      const result = await handlers.listPayments(input);
      const page = result.data as unknown as { data: ShownPayment[] };
      const found = await refunds.ofPayments(page.data);
      return { ...result, data: { ...page, data: page.data.map((payment) => withRefunds(payment, found.get(payment.id) ?? [])) } } as typeof result;
    },
  };
}
