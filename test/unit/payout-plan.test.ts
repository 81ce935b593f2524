import { describe, expect, it } from 'vitest';
import {
  approvalThresholdMinor,
  approvalThresholds,
  checkAction,
  InvalidPayoutStateError,
  OrganizationNotVerifiedError,
  SameApproverError,
  DEFAULT_APPROVAL_THRESHOLD_XOF,
  payoutSettlementPosting,
  payoutTransitIdentity,
  requiresApproval,
  reservePosting,
  type Payout,
} from '../../src/modules/payouts';
import { clearingIdentity } from '../../src/modules/ledger';

const payout: Payout = {
  id: '5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b',
  organizationId: '5a8e7f10-2c3d-4e5f-9a6b-7c8d9e0f1a2b',
  accountId: '2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e',
  ledgerAccountId: 'c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f',
  currency: 'XOF',
  amountMinor: 250_000n,
  destination: { type: 'mobile_money', provider: 'wave', msisdn: '+221770000000' },
  reference: null,
  status: 'processing',
  requiresApproval: false,
  failureCode: null,
  requestedByUserId: 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d',
  approvedByUserId: null,
  settledAt: null,
  createdAt: new Date(0),
  updatedAt: new Date(0),
};

const sum = (entries: ReadonlyArray<{ amountMinor: bigint }>) => entries.reduce((total, entry) => total + entry.amountMinor, 0n);

describe('the approval threshold in each currency', () => {
  it('carries 1,000,000 XOF over at the fixed parities, to the nearest minor unit', () => {
    expect(approvalThresholds(DEFAULT_APPROVAL_THRESHOLD_XOF)).toEqual({ XOF: '1000000', EUR: '152449', USD: '166667' });
    expect(approvalThresholdMinor(655_957n, 'EUR')).toBe(100_000n);
    expect(approvalThresholdMinor(600n, 'USD')).toBe(100n);
    expect(approvalThresholdMinor(1_000_000n, 'GBP')).toBeUndefined();
  });

  it('waits for approval at the threshold, not one minor unit under it; always in a currency without a parity', () => {
    expect(requiresApproval(999_999n, 'XOF', 1_000_000n)).toBe(false);
    expect(requiresApproval(1_000_000n, 'XOF', 1_000_000n)).toBe(true);
    expect(requiresApproval(152_448n, 'EUR', 1_000_000n)).toBe(false);
    expect(requiresApproval(152_449n, 'EUR', 1_000_000n)).toBe(true);
    expect(requiresApproval(166_666n, 'USD', 1_000_000n)).toBe(false);
    expect(requiresApproval(166_667n, 'USD', 1_000_000n)).toBe(true);
    expect(requiresApproval(1n, 'GBP', 1_000_000n)).toBe(true);
  });
});

describe('approve and cancel', () => {
  const waiting = { status: 'pending_approval' as const, requestedByUserId: 'u-1' };

  it('only a payout waiting for approval; never by its requester, nor by an API key', () => {
    expect(() => checkAction(waiting, 'approve', 'u-2')).not.toThrow();
    expect(() => checkAction(waiting, 'cancel', 'u-1')).not.toThrow();
    expect(() => checkAction(waiting, 'approve', 'u-1')).toThrow(expect.objectContaining({ code: 'SameApprover' }));
    expect(() => checkAction(waiting, 'approve', null)).toThrow(expect.objectContaining({ code: 'SameApprover' }));
    expect(() => checkAction({ ...waiting, status: 'processing' }, 'cancel', 'u-2')).toThrow(
      expect.objectContaining({ code: 'InvalidPayoutState', details: { status: 'processing', action: 'cancel', allowed_from: ['pending_approval'] } }),
    );
  });
});

describe('the posting plan', () => {
  it('reserves the amount: the account -> the payouts transit account, balanced', () => {
    const posting = reservePosting(payout);
    expect(posting).toMatchObject({ kind: 'payout.reserve', reference: payout.id });
    expect(posting.entries).toEqual([
      { account: { id: payout.ledgerAccountId }, amountMinor: -250_000n },
      { account: payoutTransitIdentity('XOF'), amountMinor: 250_000n },
    ]);
    expect(sum(posting.entries)).toBe(0n);
  });

  it('a paid payout leaves for clearing; a failed or canceled one returns to the account, even a frozen one', () => {
    const paid = payoutSettlementPosting(payout, 'paid');
    expect(paid.entries).toEqual([
      { account: payoutTransitIdentity('XOF'), amountMinor: -250_000n },
      { account: clearingIdentity('XOF'), amountMinor: 250_000n },
    ]);
    expect(paid.allowFrozen).toBe(false);
    for (const outcome of ['failed', 'canceled'] as const) {
      const back = payoutSettlementPosting(payout, outcome);
      expect(back).toMatchObject({ kind: 'payout.settlement', reference: payout.id, allowFrozen: true, metadata: { status: outcome } });
      expect(back.entries[1]).toEqual({ account: { id: payout.ledgerAccountId }, amountMinor: 250_000n });
      expect(sum(back.entries)).toBe(0n);
    }
  });
});

describe('the payout refusals and the postings’ metadata, written out', () => {
  it('each refusal says what holds and what to do', () => {
    expect(new OrganizationNotVerifiedError()).toMatchObject({
      code: 'OrganizationNotVerified',
      category: 'forbidden',
      message: 'Only a verified organisation can pay out; complete its business verification first.',
    });
    expect(() => checkAction({ status: 'pending_approval', requestedByUserId: 'u-1' }, 'approve', 'u-1')).toThrow(
      expect.objectContaining({ category: 'forbidden', message: 'A payout is approved by an owner or admin other than the member who requested it.' }),
    );
    expect(() => checkAction({ status: 'pending_approval', requestedByUserId: 'u-1' }, 'approve', 'u-1')).toThrow(SameApproverError);
    expect(() => checkAction({ status: 'processing', requestedByUserId: 'u-1' }, 'approve', 'u-2')).toThrow(
      expect.objectContaining({ category: 'conflict', message: 'A processing payout cannot be approved; only one pending approval can.', details: { status: 'processing', action: 'approve', allowed_from: ['pending_approval'] } }),
    );
    expect(() => checkAction({ status: 'paid', requestedByUserId: 'u-1' }, 'cancel', 'u-1')).toThrow(
      expect.objectContaining({ code: 'InvalidPayoutState', message: 'A paid payout cannot be canceled; only one pending approval can.' }),
    );
    expect(new InvalidPayoutStateError('pending_approval', 'cancel').message).toBe('A pending approval payout cannot be canceled; only one pending approval can.');
  });

  it('a cancel needs no second person, an approve a member (not an API key) other than the requester', () => {
    expect(() => checkAction({ status: 'pending_approval', requestedByUserId: null }, 'cancel', null)).not.toThrow();
    expect(() => checkAction({ status: 'pending_approval', requestedByUserId: null }, 'approve', 'u-2')).not.toThrow();
  });

  it('the transit account is the payouts’ own; the postings name the payout and the settlement its outcome', () => {
    expect(payoutTransitIdentity('EUR')).toEqual({ ownerType: 'platform', ownerId: null, currency: 'EUR', kind: 'rail_transit', externalRef: 'payouts' });
    expect(reservePosting(payout).metadata).toEqual({ payout_id: payout.id });
    expect(payoutSettlementPosting(payout, 'paid')).toMatchObject({ kind: 'payout.settlement', reference: payout.id, metadata: { payout_id: payout.id, status: 'paid' } });
    expect(payoutSettlementPosting(payout, 'failed').metadata).toEqual({ payout_id: payout.id, status: 'failed' });
  });

  it('a threshold of 0 holds every payout; the rounding is to the nearest minor unit, half up', () => {
    expect(approvalThresholdMinor(0n, 'EUR')).toBe(0n);
    expect(requiresApproval(0n, 'XOF', 0n)).toBe(true);
    // 3 XOF = 0.457 EUR cents: 0; 300 XOF = 45.7 cents: 46; 3 XOF = 0.5 USD cents exactly: half up, 1; 1 XOF = 0.167 cents: 0.
    expect(approvalThresholdMinor(3n, 'EUR')).toBe(0n);
    expect(approvalThresholdMinor(300n, 'EUR')).toBe(46n);
    expect(approvalThresholdMinor(3n, 'USD')).toBe(1n);
    expect(approvalThresholdMinor(1n, 'USD')).toBe(0n);
  });
});
