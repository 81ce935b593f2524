import type { components } from '../../contract';
import { formatMinor, minorToNumber } from '../ledger';
import { publicUrlOf, type Payment, type PaymentLink, type SignedAmountLink } from './payment-links-types';

type ApiPaymentLink = components['schemas']['PaymentLink'];
type ApiPayment = components['schemas']['Payment'];
type ApiSignedLink = components['schemas']['SignedPaymentLink'];

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

const optionalNumber = (minor: bigint | null, exponent: number) => (minor === null ? null : minorToNumber(minor, exponent));

/**
 * The `{AMOUNT}`/`{REFERENCE}` template, or null when the page would refuse what it produces:
 * the link no longer takes payments (inactive, expired, completed), fixes the amount or the
 * reference itself, or accepts only signed amounts (use the signed-links route instead).
 */
function linkWithAmount(link: PaymentLink, publicUrl: string): string | null {
  if (link.status !== 'active' || link.amountMinor !== null || link.reference !== null || link.requireSignedAmount) return null;
  return `${publicUrl}?amount={AMOUNT}&reference={REFERENCE}`;
}

/** The API shape of a link: public URL and the integration snippets built from PAY_URL. */
export function presentLink(link: PaymentLink, payUrl: string): ApiPaymentLink {
  const publicUrl = publicUrlOf(payUrl, link.code);
  return {
    id: link.id,
    kind: link.kind,
    code: link.code,
    organization_id: link.organizationId,
    destination_account_id: link.destinationAccountId,
    currency: link.currency,
    amount: optionalNumber(link.amountMinor, link.exponent),
    amount_minor: link.amountMinor === null ? null : link.amountMinor.toString(),
    minimum_amount: optionalNumber(link.minimumAmountMinor, link.exponent),
    maximum_amount: optionalNumber(link.maximumAmountMinor, link.exponent),
    require_signed_amount: link.requireSignedAmount,
    description: link.description,
    reference: link.reference,
    status: link.status,
    public_url: publicUrl,
    snippets: {
      link_with_amount: linkWithAmount(link, publicUrl),
      html_button: `<a href="${escapeHtml(publicUrl)}" target="_blank" rel="noopener noreferrer">Pay ${escapeHtml(link.organizationName)}</a>`,
    },
    expires_at: link.expiresAt ? link.expiresAt.toISOString() : null,
    created_at: link.createdAt.toISOString(),
    updated_at: link.updatedAt.toISOString(),
  };
}

export function presentPayment(payment: Payment): ApiPayment {
  return {
    id: payment.id,
    link_id: payment.linkId,
    organization_id: payment.organizationId,
    destination_account_id: payment.destinationAccountId,
    amount: minorToNumber(payment.amountMinor, payment.exponent),
    amount_minor: payment.amountMinor.toString(),
    currency: payment.currency,
    reference: payment.reference,
    customer_reference: payment.customerReference,
    method: payment.method,
    payer_last4: payment.payerLast4,
    status: payment.status,
    failure_reason: payment.failureReason as ApiPayment['failure_reason'],
    ledger_posting_id: payment.postingId,
    created_at: payment.createdAt.toISOString(),
    updated_at: payment.updatedAt.toISOString(),
    completed_at: payment.completedAt ? payment.completedAt.toISOString() : null,
  };
}

export function presentSignedLink(signed: SignedAmountLink): ApiSignedLink {
  return {
    link_id: signed.link.id,
    url: signed.url,
    amount: minorToNumber(signed.amountMinor, signed.link.exponent),
    amount_minor: signed.amountMinor.toString(),
    currency: signed.link.currency,
    reference: signed.reference,
    expires_at: signed.expiresAt.toISOString(),
  };
}

export function formatMoney(minor: bigint, exponent: number, currency: string): string {
  const [int = '0', frac] = formatMinor(minor, exponent).split('.');
  const grouped = int.replace(/\B(?=(\d{3})+(?!\d))/g, '\u202f');
  return `${frac ? `${grouped}.${frac}` : grouped} ${currency}`;
}
