import { ConflictError, ForbiddenError } from '../../errors';
import { clearingIdentity, type AccountIdentity } from '../ledger';
import type { PlannedPosting } from '../writes';

export type PayoutStatus = 'pending_approval' | 'processing' | 'paid' | 'failed' | 'canceled';
export type PayoutOutcome = 'paid' | 'failed' | 'canceled';
export type PayoutAction = 'approve' | 'cancel';

export type PayoutDestination =
  | { type: 'bank_account'; iban: string; holder_name: string }
  | { type: 'mobile_money'; provider: 'orange_money' | 'mtn_momo' | 'moov_money' | 'wave'; msisdn: string };

export interface Payout {
  id: string;
  organizationId: string;
  /** The organisation account (its id in the API) and the ledger account it keeps its money in. */
  accountId: string;
  ledgerAccountId: string;
  currency: string;
  amountMinor: bigint;
  destination: PayoutDestination;
  reference: string | null;
  status: PayoutStatus;
  requiresApproval: boolean;
  failureCode: string | null;
  requestedByUserId: string | null;
  approvedByUserId: string | null;
  settledAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The approval threshold when the owner has set none: 1,000,000 XOF. */
export const DEFAULT_APPROVAL_THRESHOLD_XOF = 1_000_000n;

/** The fixed parities the threshold is carried over with, as fractions (XOF per unit). */
const XOF_PER_UNIT: Record<string, { numerator: bigint; denominator: bigint; exponent: number }> = {
  XOF: { numerator: 1n, denominator: 1n, exponent: 0 },
  EUR: { numerator: 655_957n, denominator: 1000n, exponent: 2 },
  USD: { numerator: 600n, denominator: 1n, exponent: 2 },
};

/**
 * The threshold in minor units of `currency`, from the threshold in XOF at the fixed parity,
 * rounded to the nearest minor unit (1,000,000 XOF: 152449 EUR cents, 166667 USD cents).
 * Undefined for a currency without a parity: such a payout always waits for approval.
 */
export function approvalThresholdMinor(thresholdXof: bigint, currency: string): bigint | undefined {
  const parity = XOF_PER_UNIT[currency];
  if (!parity) return undefined;
  const scaled = thresholdXof * 10n ** BigInt(parity.exponent) * parity.denominator;
  return (2n * scaled + parity.numerator) / (2n * parity.numerator);
}

/** The thresholds of the currencies with a parity, in minor units. */
export function approvalThresholds(thresholdXof: bigint): Record<'XOF' | 'EUR' | 'USD', string> {
  const of = (currency: string) => (approvalThresholdMinor(thresholdXof, currency) as bigint).toString();
  return { XOF: of('XOF'), EUR: of('EUR'), USD: of('USD') };
}

/** Whether a payout of `amountMinor` waits for a second person: at or above the threshold. */
export function requiresApproval(amountMinor: bigint, currency: string, thresholdXof: bigint): boolean {
  const threshold = approvalThresholdMinor(thresholdXof, currency);
  return threshold === undefined || amountMinor >= threshold;
}

/** 403: only a verified organisation pays out. */
export class OrganizationNotVerifiedError extends ForbiddenError {
  constructor() {
    super('OrganizationNotVerified', 'Only a verified organisation can pay out; complete its business verification first.');
  }
}

/** 403: the member who requested a payout cannot be the one who approves it. */
export class SameApproverError extends ForbiddenError {
  constructor() {
    super('SameApprover', 'A payout is approved by an owner or admin other than the member who requested it.');
  }
}

/** 409: the payout's status does not allow the action. */
export class InvalidPayoutStateError extends ConflictError {
  constructor(status: PayoutStatus, action: PayoutAction) {
    super('InvalidPayoutState', `A ${status.replace('_', ' ')} payout cannot be ${action === 'approve' ? 'approved' : 'canceled'}; only one pending approval can.`, {
      status,
      action,
      allowed_from: ['pending_approval'],
    });
  }
}

/** Approving or canceling: only a payout waiting for approval; an approver other than its requester. */
export function checkAction(payout: Pick<Payout, 'status' | 'requestedByUserId'>, action: PayoutAction, actorUserId: string | null): void {
  if (payout.status !== 'pending_approval') throw new InvalidPayoutStateError(payout.status, action);
  if (action === 'approve' && (actorUserId === null || actorUserId === payout.requestedByUserId)) throw new SameApproverError();
}

/** Where payouts wait for their rail: the platform's payouts transit account of the currency. */
export function payoutTransitIdentity(currency: string): AccountIdentity {
  return { ownerType: 'platform', ownerId: null, currency, kind: 'rail_transit', externalRef: 'payouts' };
}

/**
 * The payout's reserve, when it is requested: the organisation's account -> the payouts'
 * transit account. The ledger refuses it when the account does not hold the amount (or the
 * organisation's limits do not allow it), so two payouts never spend the same money: a
 * payout's money is gone from the account from its request on, approved or not.
 */
export function reservePosting(payout: Payout): PlannedPosting {
  return {
    kind: 'payout.reserve',
    reference: payout.id,
    metadata: { payout_id: payout.id },
    entries: [
      { account: { id: payout.ledgerAccountId }, amountMinor: -payout.amountMinor },
      { account: payoutTransitIdentity(payout.currency), amountMinor: payout.amountMinor },
    ],
  };
}

/**
 * The payout's settlement, once: out to the currency's clearing account when the rail paid it,
 * back to the account when it failed or was canceled (even a frozen account: it is its own
 * money returning).
 */
export function settlementPosting(payout: Payout, outcome: PayoutOutcome): PlannedPosting {
  const to: PlannedPosting['entries'][number]['account'] = outcome === 'paid' ? clearingIdentity(payout.currency) : { id: payout.ledgerAccountId };
  return {
    kind: 'payout.settlement',
    reference: payout.id,
    metadata: { payout_id: payout.id, status: outcome },
    allowFrozen: outcome !== 'paid',
    entries: [
      { account: payoutTransitIdentity(payout.currency), amountMinor: -payout.amountMinor },
      { account: to, amountMinor: payout.amountMinor },
    ],
  };
}
