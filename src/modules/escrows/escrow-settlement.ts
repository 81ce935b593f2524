import type { Knex } from 'knex';
import { ValidationError } from '../../errors';
import { currencies, parseAmount, shardIdentity, walletIdentity, type AccountIdentity, type WalletPosting } from '../ledger';
import type { PlannedPosting } from '../writes';
import { fundingAmount, refundSettlement, releaseSettlement, splitSettlement, type EscrowFee, type Settlement } from './escrow-fee';
import type { EscrowStatus, SettlementOutcome } from './escrow-lifecycle';
import type { Escrow, ResolutionOutcome } from './escrow-repository';

/** The fee the escrow agreed at creation. */
export function feeOf(escrow: Escrow): EscrowFee {
  return {
    bps: escrow.feeBps,
    payer: escrow.feePayer,
    minimumMinor: escrow.feeMinimumMinor,
    totalMinor: escrow.feeMinor,
    buyerShareMinor: escrow.buyerFeeMinor,
    sellerShareMinor: escrow.sellerFeeMinor,
  };
}

/** An escrow as its postings need it: the row, and the holding account its funding credited (null before funding). */
export interface EscrowInLedger {
  escrow: Escrow;
  holdingAccountId: string | null;
}

/** Buyer wallet -> the escrow's holding shard: the amount plus the buyer's fee share. */
export function fundingPosting(escrow: Escrow): PlannedPosting {
  const paid = fundingAmount(escrow.amountMinor, feeOf(escrow));
  return {
    kind: 'escrow.funding',
    reference: escrow.id,
    metadata: { escrow_id: escrow.id },
    entries: [
      { account: walletIdentity(escrow.buyerUserId, escrow.currency), amountMinor: -paid },
      { account: shardIdentity('escrow_holding', escrow.currency, escrow.id), amountMinor: paid },
    ],
  };
}

/**
 * The one settlement posting of an escrow: out of the holding account its funding credited
 * (escrows funded before holding was sharded sit in the unsharded account), to the seller, the
 * buyer and the fee shard (the parts the plan pays); its (kind, reference) is unique, so no
 * escrow is settled twice. Money going back to the buyer alone is a reversal: it reaches even
 * a frozen wallet.
 */
export function settlementPosting(locked: EscrowInLedger, plan: Settlement, status: EscrowStatus): PlannedPosting {
  const { escrow, holdingAccountId } = locked;
  if (!holdingAccountId) throw new Error(`escrow ${escrow.id} is settled but its funding credited no holding account`);
  const credits = (
    [
      [walletIdentity(escrow.sellerUserId, escrow.currency), plan.toSellerMinor],
      [walletIdentity(escrow.buyerUserId, escrow.currency), plan.toBuyerMinor],
      [shardIdentity('fees', escrow.currency, escrow.id), plan.feeMinor],
    ] as Array<[AccountIdentity, bigint]>
  ).filter(([, amountMinor]) => amountMinor > 0n);
  return {
    kind: 'escrow.settlement',
    reference: escrow.id,
    metadata: { escrow_id: escrow.id, status },
    allowFrozen: status === 'refunded',
    entries: [{ account: { id: holdingAccountId }, amountMinor: -plan.heldMinor }, ...credits.map(([account, amountMinor]) => ({ account, amountMinor }))],
  };
}

/**
 * The postings of an action on an escrow, from the escrow alone: the one list of the accounts it
 * touches (its decision posts them). A resolution's plan
 * depends on its request: ahead of it, the accounts of both a release and a refund (every part
 * a split may pay). Actions that move no money: none.
 */
export function postingPlan(locked: EscrowInLedger, action: string | undefined): PlannedPosting[] {
  const { escrow } = locked;
  if (action === 'fund') return [fundingPosting(escrow)];
  if (!locked.holdingAccountId) return [];
  const fee = feeOf(escrow);
  if (action === 'accept') return [settlementPosting(locked, releaseSettlement(escrow.amountMinor, fee), 'released')];
  if (action === 'refund') return [settlementPosting(locked, refundSettlement(escrow.amountMinor, fee), 'refunded')];
  if (action === 'resolve') return [...postingPlan(locked, 'accept'), ...postingPlan(locked, 'refund')];
  return [];
}

/** How a settlement's refusal names the parties: the buyer's wallet is the buyer's, any other the seller's. */
export function settlementParties(escrow: Escrow): WalletPosting {
  return { parties: new Map(), owners: new Map([[escrow.buyerUserId, 'buyer']]), defaultParty: 'seller', covers: 'this settlement' };
}

/** How a funding's refusal names the parties: the buyer's wallet pays it. */
export function fundingParties(): WalletPosting {
  return { parties: new Map(), defaultParty: 'buyer', covers: 'the amount plus your share of the fee' };
}

/** What a settlement writes: the escrow's final status, the row's changes and the amounts its event records. */
export interface SettlementResult {
  status: EscrowStatus;
  changes: Partial<Escrow>;
  amounts: { to_seller_minor: string; to_buyer_minor: string; fee_minor: string };
  posting: PlannedPosting;
}

/** A settlement decided: its posting, the row's final status (the lifecycle's, from what the settlement pays: `statusFor`) and changes. */
export function settle(locked: EscrowInLedger, plan: Settlement, statusFor: (outcome: SettlementOutcome) => EscrowStatus, now: Date): SettlementResult {
  const status = statusFor(plan);
  return {
    status,
    posting: settlementPosting(locked, plan, status),
    changes: {
      status,
      settledToSellerMinor: plan.toSellerMinor,
      settledToBuyerMinor: plan.toBuyerMinor,
      settledFeeMinor: plan.feeMinor,
      ...(status === 'released' ? { releasedAt: now } : { refundedAt: now }),
    },
    amounts: { to_seller_minor: plan.toSellerMinor.toString(), to_buyer_minor: plan.toBuyerMinor.toString(), fee_minor: plan.feeMinor.toString() },
  };
}

/** A resolution's request, as the service receives it. */
export interface ResolutionRequest {
  outcome: ResolutionOutcome;
  sellerAmount?: number | string;
}

/** Checks of the request alone (before any lock): `seller_amount` goes with the outcome `split` only. */
export function checkResolutionShape(command: ResolutionRequest): void {
  if (command.outcome === 'split' && command.sellerAmount === undefined) {
    throw ValidationError.field('body.seller_amount', 'seller_amount is required with the outcome "split".');
  }
  if (command.outcome !== 'split' && command.sellerAmount !== undefined) {
    throw ValidationError.field('body.seller_amount', 'seller_amount is only for the outcome "split".');
  }
}

/** Where a resolution sends the held money, and the seller's amount of a split. */
export async function resolutionPlan(trx: Knex.Transaction, escrow: Escrow, command: ResolutionRequest): Promise<{ plan: Settlement; sellerAmountMinor: bigint | null }> {
  const fee = feeOf(escrow);
  if (command.outcome === 'release') return { plan: releaseSettlement(escrow.amountMinor, fee), sellerAmountMinor: null };
  if (command.outcome === 'refund') return { plan: refundSettlement(escrow.amountMinor, fee), sellerAmountMinor: null };
  const { exponent } = await currencies.require(trx, escrow.currency);
  const sellerAmountMinor = parseAmount(command.sellerAmount, exponent, { field: 'body.seller_amount' });
  if (sellerAmountMinor >= escrow.amountMinor) {
    throw ValidationError.field('body.seller_amount', 'seller_amount must be less than the escrow amount (use the outcome "release" to pay the seller everything).');
  }
  return { plan: splitSettlement(escrow.amountMinor, fee, sellerAmountMinor), sellerAmountMinor };
}
