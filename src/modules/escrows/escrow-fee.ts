/**
 * The escrow fee and where a settlement sends the held money (pure bigint arithmetic in
 * minor units of the escrow's currency).
 *
 * - The fee is `bps` basis points of the amount, rounded up to the currency's minor unit (1 %
 *   of 1,250 XOF is 12.5, so 13 XOF; 1 % of 49 XOF is 0.49, so 1 XOF: a non-zero rate never
 *   gives a zero fee, so splitting one sale into many small escrows saves nothing), and at
 *   least the currency's minimum (`ESCROW_MIN_FEE`, agreed at creation) when the rate is not
 *   zero; never more than the amount itself.
 * - `fee_payer` `buyer`: the buyer pays it on top of the amount when funding; `seller`: it is
 *   taken from what the seller receives; `split`: half each, the odd minor unit on the buyer.
 * - The buyer funds amount + buyer's share. The fee is charged once, and only when money is
 *   released to the seller; a refund returns everything the buyer paid, fee share included.
 * - A split resolution (the seller gets `seller_amount` of the amount) charges the fee on
 *   `seller_amount` only, shared as agreed: the seller receives seller_amount less the
 *   seller's share of that fee, and the buyer gets back the rest of what it paid.
 */

export type FeePayer = 'buyer' | 'seller' | 'split';

export interface EscrowFee {
  bps: number;
  payer: FeePayer;
  /** The minimum fee agreed at creation, in minor units (0: none). */
  minimumMinor: bigint;
  totalMinor: bigint;
  buyerShareMinor: bigint;
  sellerShareMinor: bigint;
}

/** Where a settlement sends the money held for one escrow; the three parts sum to `heldMinor`. */
export interface Settlement {
  heldMinor: bigint;
  toSellerMinor: bigint;
  toBuyerMinor: bigint;
  feeMinor: bigint;
}

const BPS_DENOMINATOR = 10_000n;

export function feeFor(amountMinor: bigint, bps: number, payer: FeePayer, minimumMinor = 0n): EscrowFee {
  if (amountMinor < 0n) throw new RangeError('an escrow amount is never negative');
  if (!Number.isInteger(bps) || bps < 0 || bps > 10_000) throw new RangeError(`bad fee rate ${bps} bps`);
  if (minimumMinor < 0n) throw new RangeError('a minimum fee is never negative');
  // Up: add the denominator less one before the (floor) division of a non-negative value.
  const byRate = (amountMinor * BigInt(bps) + BPS_DENOMINATOR - 1n) / BPS_DENOMINATOR;
  const floor = bps > 0 && byRate < minimumMinor ? minimumMinor : byRate;
  const totalMinor = floor > amountMinor ? amountMinor : floor;
  if (payer === 'buyer') return { bps, payer, minimumMinor, totalMinor, buyerShareMinor: totalMinor, sellerShareMinor: 0n };
  if (payer === 'seller') return { bps, payer, minimumMinor, totalMinor, buyerShareMinor: 0n, sellerShareMinor: totalMinor };
  const sellerShareMinor = totalMinor / 2n;
  return { bps, payer, minimumMinor, totalMinor, buyerShareMinor: totalMinor - sellerShareMinor, sellerShareMinor };
}

/** What the buyer pays into the holding account when funding. */
export function fundingAmount(amountMinor: bigint, fee: EscrowFee): bigint {
  return amountMinor + fee.buyerShareMinor;
}

/** The seller receives the amount less its fee share; the fee account the whole fee. */
export function releaseSettlement(amountMinor: bigint, fee: EscrowFee): Settlement {
  return { heldMinor: fundingAmount(amountMinor, fee), toSellerMinor: amountMinor - fee.sellerShareMinor, toBuyerMinor: 0n, feeMinor: fee.totalMinor };
}

/** Everything the buyer paid goes back, fee share included; no fee is charged. */
export function refundSettlement(amountMinor: bigint, fee: EscrowFee): Settlement {
  const held = fundingAmount(amountMinor, fee);
  return { heldMinor: held, toSellerMinor: 0n, toBuyerMinor: held, feeMinor: 0n };
}

/** A dispute split: `sellerAmountMinor` (0 < it < amount) to the seller, the fee on it only. */
export function splitSettlement(amountMinor: bigint, fee: EscrowFee, sellerAmountMinor: bigint): Settlement {
  if (sellerAmountMinor <= 0n || sellerAmountMinor >= amountMinor) throw new RangeError('a split gives the seller part of the amount, not none or all of it');
  const held = fundingAmount(amountMinor, fee);
  const onSellerPart = feeFor(sellerAmountMinor, fee.bps, fee.payer, fee.minimumMinor);
  const toSellerMinor = sellerAmountMinor - onSellerPart.sellerShareMinor;
  return { heldMinor: held, toSellerMinor, toBuyerMinor: held - toSellerMinor - onSellerPart.totalMinor, feeMinor: onSellerPart.totalMinor };
}
