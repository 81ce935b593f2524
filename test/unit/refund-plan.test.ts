import { describe, expect, it } from 'vitest';
import { holdPosting, refundAmount, refundSettlementPosting, refundTransitIdentity, type Refund } from '../../src/modules/refunds';
// eslint-disable-next-line no-restricted-imports -- the pure rules the module's index does not export, tested on their own
import { PaymentNotRefundableError } from '../../src/modules/refunds/refund-settlement';

const refund: Refund = {
  id: '3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f',
  organizationId: '5a8e7f10-2c3d-4e5f-9a6b-7c8d9e0f1a2b',
  paymentId: '7b8c9d0e-1f2a-4b3c-8d4e-5f6a7b8c9d0e',
  accountId: 'c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f',
  currency: 'EUR',
  amountMinor: 1_250n,
  reason: 'duplicate',
  status: 'pending',
  failureCode: null,
  requestedByUserId: null,
  holdPostingId: null,
  settlementPostingId: null,
  settledAt: null,
  createdAt: new Date(0),
  updatedAt: new Date(0),
};

const sum = (entries: ReadonlyArray<{ amountMinor: bigint }>) => entries.reduce((total, entry) => total + entry.amountMinor, 0n);

describe('refundAmount: never more than is left of the payment, never nothing', () => {
  it('defaults to everything not yet refunded', () => {
    expect(refundAmount(10_000n, 0n, undefined)).toBe(10_000n);
    expect(refundAmount(10_000n, 4_000n, undefined)).toBe(6_000n);
  });

  it('takes a part up to exactly what is left; one minor unit more is refused with what is left', () => {
    expect(refundAmount(10_000n, 4_000n, 6_000n)).toBe(6_000n);
    expect(() => refundAmount(10_000n, 4_000n, 6_001n)).toThrow(expect.objectContaining({ code: 'RefundExceedsPayment', details: { amount_minor: '6001', refundable_minor: '6000' } }));
  });

  it('refuses a refund of a fully refunded payment, even by default', () => {
    expect(() => refundAmount(10_000n, 10_000n, undefined)).toThrow(expect.objectContaining({ code: 'RefundExceedsPayment', details: { amount_minor: '0', refundable_minor: '0' } }));
    expect(() => refundAmount(10_000n, 10_000n, 1n)).toThrow(expect.objectContaining({ code: 'RefundExceedsPayment' }));
  });
});

describe('the refund postings', () => {
  it('holds the amount out of the credited account into the refunds transit account, balanced', () => {
    const hold = holdPosting(refund);
    expect(hold).toMatchObject({ kind: 'refund.hold', reference: refund.id });
    expect(hold.allowFrozen).toBeUndefined();
    expect(hold.entries).toEqual([
      { account: { id: refund.accountId }, amountMinor: -1_250n },
      { account: refundTransitIdentity('EUR'), amountMinor: 1_250n },
    ]);
    expect(sum(hold.entries)).toBe(0n);
  });

  it('sends a succeeded refund out to the clearing account, and a failed one back to the account (even frozen)', () => {
    const out = refundSettlementPosting(refund, 'succeeded');
    expect(out.entries).toEqual([
      { account: refundTransitIdentity('EUR'), amountMinor: -1_250n },
      { account: { ownerType: 'platform', ownerId: null, currency: 'EUR', kind: 'external_clearing' }, amountMinor: 1_250n },
    ]);
    expect(out.allowFrozen).toBe(false);
    const back = refundSettlementPosting(refund, 'failed');
    expect(back.entries[1]).toEqual({ account: { id: refund.accountId }, amountMinor: 1_250n });
    expect(back.allowFrozen).toBe(true);
    expect([sum(out.entries), sum(back.entries)]).toEqual([0n, 0n]);
    expect(out.kind === back.kind && out.reference === back.reference).toBe(true);
  });
});

describe('the refund refusals and the postings’ metadata, written out', () => {
  it('a refund above what is left says how much is left; a refund of nothing is refused too', () => {
    expect(() => refundAmount(10_000n, 4_000n, 6_001n)).toThrow(
      expect.objectContaining({ category: 'conflict', message: 'The refunds of a payment never add up to more than it: 6000 (minor units) is left to refund.' }),
    );
    expect(() => refundAmount(10_000n, 0n, 0n)).toThrow(expect.objectContaining({ code: 'RefundExceedsPayment', details: { amount_minor: '0', refundable_minor: '10000' } }));
    expect(() => refundAmount(10_000n, 12_000n, undefined)).toThrow(expect.objectContaining({ details: { amount_minor: '-2000', refundable_minor: '0' } }));
    expect(refundAmount(10_000n, 9_999n, 1n)).toBe(1n);
  });

  it('only a succeeded payment is refunded: 409 PaymentNotRefundable with its status', () => {
    const error = new PaymentNotRefundableError('pending');
    expect(error).toMatchObject({ code: 'PaymentNotRefundable', category: 'conflict', message: 'This payment is pending: only a succeeded payment can be refunded.', details: { status: 'pending' } });
  });

  it('the hold and the settlement name the refund and the payment; the settlement its outcome; the transit account is the refunds’ own', () => {
    expect(refundTransitIdentity('EUR')).toEqual({ ownerType: 'platform', ownerId: null, currency: 'EUR', kind: 'rail_transit', externalRef: 'refunds' });
    expect(holdPosting(refund).metadata).toEqual({ refund_id: refund.id, payment_id: refund.paymentId });
    const settled = refundSettlementPosting(refund, 'succeeded');
    expect(settled).toMatchObject({ kind: 'refund.settlement', reference: refund.id });
    expect(settled.metadata).toEqual({ refund_id: refund.id, payment_id: refund.paymentId, status: 'succeeded' });
    expect(refundSettlementPosting(refund, 'failed').metadata).toEqual({ refund_id: refund.id, payment_id: refund.paymentId, status: 'failed' });
  });
});
