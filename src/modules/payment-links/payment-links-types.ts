/** Domain types of payment links, the Checkout and payments (camelCase; repositories map rows). */

export type PaymentLinkKind = 'link' | 'checkout';
export type PaymentLinkStatus = 'active' | 'inactive' | 'expired' | 'completed';
export type PaymentStatus = 'pending' | 'succeeded' | 'failed';
export type PaymentMethod = 'mobile_money' | 'card';

export interface PaymentLink {
  id: string;
  organizationId: string;
  organizationName: string;
  kind: PaymentLinkKind;
  code: string;
  destinationAccountId: string;
  currency: string;
  /** Minor-unit exponent of the currency (XOF 0, EUR 2). */
  exponent: number;
  amountMinor: bigint | null;
  minimumAmountMinor: bigint | null;
  maximumAmountMinor: bigint | null;
  description: string | null;
  reference: string | null;
  requireSignedAmount: boolean;
  /** The effective status: an active link past its expiry reads as `expired`. */
  status: PaymentLinkStatus;
  expiresAt: Date | null;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface Payment {
  id: string;
  organizationId: string;
  linkId: string;
  oneOff: boolean;
  destinationAccountId: string;
  currency: string;
  exponent: number;
  amountMinor: bigint;
  /** The order reference the merchant fixed (the link's own, or a signed URL's); only these reserve an order. */
  reference: string | null;
  /** A reference an unsigned URL carried: what the customer's browser sent, a note only. */
  customerReference: string | null;
  method: PaymentMethod;
  payerLast4: string;
  status: PaymentStatus;
  failureReason: string | null;
  sandboxOutcome: string;
  settleAfter: Date;
  formNonce: string;
  postingId: string | null;
  completedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Largest amount a link or a payment may carry, in major units (as the contract says). */
export const MAX_MAJOR_AMOUNT = 1_000_000_000_000n;

export function maxMinorFor(exponent: number): bigint {
  return MAX_MAJOR_AMOUNT * 10n ** BigInt(exponent) - 1n;
}

/** A one-off link with a signed amount: the URL a customer opens to pay exactly that amount. */
export interface SignedAmountLink {
  link: PaymentLink;
  amountMinor: bigint;
  reference: string;
  expiresAt: Date;
  url: string;
}

/** The public address of a link on the payment page. */
export function publicUrlOf(payUrl: string, code: string): string {
  return `${payUrl}/pay/${code}`;
}
