import type { AccountIdentity } from '../ledger';
import type { Decision, PlannedPosting, RowChange } from '../writes';
import type { CollectionOutcome, MobileMoneyProvider } from './mobile-money-rail';

export type TopUpStatus = 'pending' | 'succeeded' | 'failed' | 'reversed';

export interface TopUp {
  id: string;
  userId: string;
  walletId: string;
  currency: string;
  amountMinor: bigint;
  method: 'mobile_money';
  provider: MobileMoneyProvider;
  msisdn: string;
  status: TopUpStatus;
  providerReference: string;
  failureCode: string | null;
  postingId: string | null;
  settledAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What an Idempotency-Key of a top-up records: the top-up, its status and where it is. */
export function topUpResource(topUp: TopUp): { type: 'top_up'; id: string; status: TopUpStatus; location: string } {
  return { type: 'top_up', id: topUp.id, status: topUp.status, location: `/api/wallets/${topUp.walletId}/top-ups/${topUp.id}` };
}

/** The event type of each status a top-up settles in. */
const SETTLED_EVENT: Record<Exclude<TopUpStatus, 'pending'>, string> = {
  succeeded: 'top_up.succeeded',
  failed: 'top_up.failed',
  reversed: 'top_up.reversed',
};

/**
 * The rail's clearing account of a provider in a currency: the outside world's side of the
 * money it collects (external_clearing, the one kind that may go negative).
 */
export function railClearingIdentity(provider: MobileMoneyProvider, currency: string): AccountIdentity {
  return { ownerType: 'platform', ownerId: null, currency, kind: 'external_clearing', externalRef: `mobile_money.${provider}` };
}

/**
 * The one posting of a top-up, from the top-up alone: the rail's clearing account -> the wallet,
 * the whole amount (its (kind, reference) is unique: no top-up is credited twice). A frozen
 * wallet, or limits that no longer allow the credit, make the ledger refuse it as a whole.
 */
export function creditPosting(topUp: TopUp): PlannedPosting {
  return {
    kind: 'top_up.credit',
    reference: topUp.id,
    metadata: { top_up_id: topUp.id, provider: topUp.provider, provider_reference: topUp.providerReference },
    entries: [
      { account: railClearingIdentity(topUp.provider, topUp.currency), amountMinor: -topUp.amountMinor },
      { account: { id: topUp.walletId }, amountMinor: topUp.amountMinor },
    ],
  };
}

/** The postings of settling a pending top-up with `outcome`: the credit when it succeeded, none otherwise. */
export function postingPlan(topUp: TopUp, outcome: CollectionOutcome['status']): PlannedPosting[] {
  return topUp.status === 'pending' && outcome === 'succeeded' ? [creditPosting(topUp)] : [];
}

/** How a refusal of the ledger is written as a reversed top-up's failure code: `AccountFrozen` -> `account_frozen`. */
export function reversalCode(refusal: string): string {
  return refusal.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

/** A settlement decided: the top-up after it, and the decision that writes it. */
export interface TopUpSettlement {
  after: TopUp;
  decision: Decision;
}

/**
 * Settles a pending top-up: `succeeded` (credited: the posting, its id on the row), `failed`
 * (the rail's failure code), or `reversed` (the ledger refused the credit: no posting, the
 * refusal as the failure code; the rail pays the payer back). The row is updated only while it
 * is still pending, so two settlements never both apply; one event, carrying the top-up after.
 */
export function settlement(topUp: TopUp, result: CollectionOutcome | { status: 'reversed'; refusal: string }, now: Date, present: (topUp: TopUp) => unknown): TopUpSettlement {
  if (topUp.status !== 'pending') throw new Error(`top-up ${topUp.id} is ${topUp.status}, not pending`);
  const failureCode = result.status === 'failed' ? result.failureCode : result.status === 'reversed' ? reversalCode(result.refusal) : null;
  const after: TopUp = { ...topUp, status: result.status, failureCode, settledAt: now, updatedAt: now };
  const postings = postingPlan(topUp, result.status === 'succeeded' ? 'succeeded' : 'failed');
  const change: RowChange = {
    table: 'top_ups',
    id: topUp.id,
    expect: { status: 'pending' },
    set: { status: after.status, failure_code: failureCode, settled_at: now.toISOString(), updated_at: now.toISOString() },
    ...(postings.length ? { postingIds: { posting_id: 0 } } : {}),
  };
  const payload = { amount_minor: topUp.amountMinor.toString(), currency: topUp.currency, ...(failureCode ? { failure_code: failureCode } : {}) };
  return {
    after,
    decision: {
      postings,
      changes: [change],
      events: [{ subjectType: 'top_up', subjectId: topUp.id, type: SETTLED_EVENT[result.status], actorUserId: null, payload, occurredAt: now, object: present(after), previousStatus: 'pending' }],
      answer: { resource: topUpResource(after) },
    },
  };
}
