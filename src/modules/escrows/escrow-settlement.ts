import type { Knex } from 'knex';
import { ValidationError } from '../../errors';
import { creditedAccountOf, currencies, ensureAccounts, parseAmount, post, shardIdentity, walletIdentity, walletRefusal, type AccountIdentity, type EntryInput, type LedgerAccount } from '../ledger';
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

/** Buyer wallet -> holding account: the amount plus the buyer's fee share. Returns the posting id. */
export async function postFunding(trx: Knex.Transaction, escrow: Escrow): Promise<string> {
  const paid = fundingAmount(escrow.amountMinor, feeOf(escrow));
  const [wallet, holding] = (await ensureAccounts(trx, [walletIdentity(escrow.buyerUserId, escrow.currency), shardIdentity('escrow_holding', escrow.currency, escrow.id)])) as [LedgerAccount, LedgerAccount];
  try {
    const posting = await post(trx, {
      kind: 'escrow.funding',
      reference: escrow.id,
      metadata: { escrow_id: escrow.id },
      entries: [
        { accountId: wallet.id, amountMinor: -paid },
        { accountId: holding.id, amountMinor: paid },
      ],
    });
    return posting.id;
  } catch (error) {
    throw walletRefusal(error, { parties: new Map([[wallet.id, 'buyer']]), defaultParty: 'buyer', covers: 'the amount plus your share of the fee' });
  }
}

/** What a settlement wrote: the escrow's final status, the row's changes and the amounts its event records. */
export interface SettlementResult {
  status: EscrowStatus;
  changes: Partial<Escrow>;
  amounts: { to_seller_minor: string; to_buyer_minor: string; fee_minor: string };
}

/**
 * The one settlement posting of an escrow (holding -> seller, buyer, fee account; its
 * (kind, reference) is unique, so no escrow is settled twice) and the row's final status (the
 * lifecycle's, from what the settlement pays: `statusFor`).
 */
export async function postSettlement(
  trx: Knex.Transaction,
  escrow: Escrow,
  plan: Settlement,
  statusFor: (outcome: SettlementOutcome) => EscrowStatus,
  now: Date,
): Promise<SettlementResult> {
  const holding = await holdingAccountOf(trx, escrow);
  // Where the money goes, in the order of the entries: every account in one round trip.
  const buyerWallet = walletIdentity(escrow.buyerUserId, escrow.currency);
  const credits = (
    [
      [walletIdentity(escrow.sellerUserId, escrow.currency), plan.toSellerMinor],
      [buyerWallet, plan.toBuyerMinor],
      [shardIdentity('fees', escrow.currency, escrow.id), plan.feeMinor],
    ] as Array<[AccountIdentity, bigint]>
  ).filter(([, amountMinor]) => amountMinor > 0n);
  const accounts = await ensureAccounts(trx, credits.map(([identity]) => identity));
  const entries: EntryInput[] = [{ accountId: holding.id, amountMinor: -plan.heldMinor }, ...credits.map(([, amountMinor], index) => ({ accountId: (accounts[index] as LedgerAccount).id, amountMinor }))];
  const buyerWalletId = accounts[credits.findIndex(([identity]) => identity === buyerWallet)]?.id;
  const status = statusFor(plan);
  let postingId: string;
  try {
    const posting = await post(
      trx,
      { kind: 'escrow.settlement', reference: escrow.id, metadata: { escrow_id: escrow.id, status }, entries },
      // Money going back to the buyer alone is a reversal: it reaches even a frozen wallet.
      { allowFrozen: status === 'refunded' },
    );
    postingId = posting.id;
  } catch (error) {
    // A split pays both parties: the ledger names the account it found frozen.
    throw walletRefusal(error, { parties: new Map(buyerWalletId ? [[buyerWalletId, 'buyer' as const]] : []), defaultParty: 'seller', covers: 'this settlement' });
  }
  return {
    status,
    changes: {
      status,
      settlementPostingId: postingId,
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

/**
 * The holding account the escrow's funding credited: the settlement takes the money back out of
 * it (escrows funded before holding was sharded sit in the unsharded account).
 */
async function holdingAccountOf(trx: Knex.Transaction, escrow: Escrow): Promise<LedgerAccount> {
  const holding = escrow.fundingPostingId ? await creditedAccountOf(trx, escrow.fundingPostingId, 'escrow_holding') : undefined;
  if (!holding) throw new Error(`escrow ${escrow.id} is settled but its funding credited no holding account`);
  return holding;
}
