import { describe, expect, it } from 'vitest';
import { feeFor, refundSettlement, releaseSettlement, splitSettlement } from '../../src/modules/escrows';
import type { Escrow } from '../../src/modules/escrows/escrow-repository';
import { checkResolutionShape, fundingParties, fundingPosting, postingPlan, settle, settlementParties, settlementPosting } from '../../src/modules/escrows/escrow-settlement';
import { shardIdentity, walletIdentity, walletRefusal, ledgerRefusal } from '../../src/modules/ledger';
import { accountsOf } from '../../src/modules/writes';

const BUYER = '00000000-0000-4000-8000-00000000000b';
const SELLER = '00000000-0000-4000-8000-00000000000c';
const ID = '00000000-0000-4000-8000-0000000000e1';
const HOLDING = '00000000-0000-4000-8000-0000000000a1';
const NOW = new Date('2026-11-23T12:00:00Z');

function escrow(payer: 'buyer' | 'seller' | 'split' = 'buyer'): Escrow {
  const fee = feeFor(10_000n, 100, payer);
  return {
    id: ID,
    buyerUserId: BUYER,
    sellerUserId: SELLER,
    currency: 'XOF',
    amountMinor: 10_000n,
    feeBps: fee.bps,
    feePayer: fee.payer,
    feeMinor: fee.totalMinor,
    feeMinimumMinor: fee.minimumMinor,
    buyerFeeMinor: fee.buyerShareMinor,
    sellerFeeMinor: fee.sellerShareMinor,
    status: 'delivered',
  } as Escrow;
}

describe("an escrow's posting plan (the one list of the accounts an action touches)", () => {
  it('funds from the buyer wallet into the escrow holding shard: the amount plus the buyer fee share', () => {
    const [posting] = postingPlan({ escrow: escrow(), holdingAccountId: null }, 'fund');
    expect(posting).toEqual({
      kind: 'escrow.funding',
      reference: ID,
      metadata: { escrow_id: ID },
      entries: [
        { account: walletIdentity(BUYER, 'XOF'), amountMinor: -10_100n },
        { account: shardIdentity('escrow_holding', 'XOF', ID), amountMinor: 10_100n },
      ],
    });
    expect(fundingPosting(escrow('seller')).entries.map((entry) => entry.amountMinor)).toEqual([-10_000n, 10_000n]);
  });

  it('settles out of the holding account the funding credited, to the parts the settlement pays (none of zero)', () => {
    const locked = { escrow: escrow(), holdingAccountId: HOLDING };
    const [release] = postingPlan(locked, 'accept');
    expect(release).toEqual({
      kind: 'escrow.settlement',
      reference: ID,
      metadata: { escrow_id: ID, status: 'released' },
      allowFrozen: false,
      entries: [
        { account: { id: HOLDING }, amountMinor: -10_100n },
        { account: walletIdentity(SELLER, 'XOF'), amountMinor: 10_000n },
        { account: shardIdentity('fees', 'XOF', ID), amountMinor: 100n },
      ],
    });
    const [refund] = postingPlan(locked, 'refund');
    // Money going back to the buyer alone reaches even a frozen wallet.
    expect(refund).toMatchObject({ metadata: { escrow_id: ID, status: 'refunded' }, allowFrozen: true, entries: [{ account: { id: HOLDING }, amountMinor: -10_100n }, { account: walletIdentity(BUYER, 'XOF'), amountMinor: 10_100n }] });
    expect(settlementPosting(locked, splitSettlement(10_000n, feeFor(10_000n, 100, 'buyer'), 4_000n), 'released').entries.map((entry) => entry.account)).toEqual([
      { id: HOLDING },
      walletIdentity(SELLER, 'XOF'),
      walletIdentity(BUYER, 'XOF'),
      shardIdentity('fees', 'XOF', ID),
    ]);
  });

  it('ahead of a resolution, plans every account a release or a refund may pay; no settlement before funding; nothing for actions that move no money', () => {
    const locked = { escrow: escrow(), holdingAccountId: HOLDING };
    expect(accountsOf(postingPlan(locked, 'resolve'))).toEqual({
      accountIds: [HOLDING, HOLDING],
      identities: [walletIdentity(SELLER, 'XOF'), shardIdentity('fees', 'XOF', ID), walletIdentity(BUYER, 'XOF')],
    });
    expect(postingPlan({ escrow: escrow(), holdingAccountId: null }, 'accept')).toEqual([]);
    for (const action of ['deliver', 'dispute', 'cancel', undefined]) expect(postingPlan(locked, action)).toEqual([]);
    expect(() => settlementPosting({ escrow: escrow(), holdingAccountId: null }, releaseSettlement(10_000n, feeFor(10_000n, 100, 'buyer')), 'released')).toThrow(/credited no holding account/);
  });

  it("decides a settlement's status with the lifecycle's function and records what it pays", () => {
    const locked = { escrow: escrow(), holdingAccountId: HOLDING };
    const settled = settle(locked, refundSettlement(10_000n, feeFor(10_000n, 100, 'buyer')), () => 'refunded', NOW);
    expect(settled.status).toBe('refunded');
    expect(settled.changes).toEqual({ status: 'refunded', settledToSellerMinor: 0n, settledToBuyerMinor: 10_100n, settledFeeMinor: 0n, refundedAt: NOW });
    expect(settled.amounts).toEqual({ to_seller_minor: '0', to_buyer_minor: '10100', fee_minor: '0' });
    expect(settle(locked, releaseSettlement(10_000n, feeFor(10_000n, 100, 'buyer')), () => 'released', NOW).changes).toMatchObject({ status: 'released', releasedAt: NOW });
  });

  it("names the party of a refusal: a frozen buyer wallet is the buyer's, any other account the seller's; a funding's is always the buyer's", () => {
    const frozen = (ownerId: string | null) => ledgerRefusal('AccountFrozen', { account_id: HOLDING, owner_id: ownerId });
    expect(walletRefusal(frozen(BUYER), settlementParties(escrow()))).toMatchObject({ code: 'WalletFrozen', details: { party: 'buyer' } });
    expect(walletRefusal(frozen(SELLER), settlementParties(escrow()))).toMatchObject({ code: 'WalletFrozen', details: { party: 'seller' } });
    expect(walletRefusal(frozen(null), settlementParties(escrow()))).toMatchObject({ code: 'WalletFrozen', details: { party: 'seller' } });
    expect(walletRefusal(frozen(BUYER), fundingParties())).toMatchObject({ code: 'WalletFrozen', details: { party: 'buyer' } });
    const short = ledgerRefusal('InsufficientFunds', { account_id: HOLDING, currency: 'XOF', available: '5', required: '10100' });
    expect(walletRefusal(short, fundingParties())).toMatchObject({ code: 'InsufficientFunds', details: { currency: 'XOF', available: '5', required: '10100' } });
    expect((walletRefusal(short, fundingParties()) as Error).message).toContain('the amount plus your share of the fee');
    expect((walletRefusal(short, settlementParties(escrow())) as Error).message).toContain('this settlement');
  });

  it('checks the shape of a resolution before any lock: seller_amount goes with the outcome "split", and only with it', () => {
    const refusal = (message: string) => ({ code: 'ValidationError', message, details: [{ field: 'body.seller_amount', message }] });
    expect(() => checkResolutionShape({ outcome: 'split' })).toThrow(expect.objectContaining(refusal('seller_amount is required with the outcome "split".')));
    for (const outcome of ['release', 'refund'] as const) {
      expect(() => checkResolutionShape({ outcome, sellerAmount: '10' })).toThrow(expect.objectContaining(refusal('seller_amount is only for the outcome "split".')));
      expect(() => checkResolutionShape({ outcome })).not.toThrow();
    }
    expect(() => checkResolutionShape({ outcome: 'split', sellerAmount: '10' })).not.toThrow();
    expect(() => checkResolutionShape({ outcome: 'split', sellerAmount: 0 })).not.toThrow();
  });
});
