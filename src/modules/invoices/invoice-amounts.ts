import { ValidationError } from '../../errors';
import { MAX_MINOR, parseAmount } from '../ledger';
import type { LineItem } from './invoice-types';

/** A line as the API receives it: the unit amount is a decimal string in major units. */
export interface LineItemInput {
  description: string;
  quantity: number;
  unit_amount: string;
  tax_rate_bps?: number;
}

export interface DocumentTotals {
  lineItems: LineItem[];
  subtotalMinor: bigint;
  taxMinor: bigint;
  totalMinor: bigint;
}

/** amount x bps / 10000, rounded half up; integers only. */
export function taxOf(amountMinor: bigint, taxRateBps: number): bigint {
  return (amountMinor * BigInt(taxRateBps) + 5_000n) / 10_000n;
}

/**
 * Converts the lines to minor units of a currency with `exponent` decimals and adds them up,
 * in bigint only. A unit amount finer than the currency allows (1.5 XOF, 0.001 EUR) or a
 * total beyond a bigint is a ValidationError naming the field.
 */
export function computeTotals(lines: LineItemInput[], exponent: number, field = 'body.line_items'): DocumentTotals {
  let subtotal = 0n;
  let tax = 0n;
  const lineItems = lines.map((line, index): LineItem => {
    const where = `${field}[${index}]`;
    if (!Number.isSafeInteger(line.quantity) || line.quantity < 1) throw ValidationError.field(`${where}.quantity`, 'quantity must be a positive integer.');
    const taxRateBps = line.tax_rate_bps ?? 0;
    if (!Number.isInteger(taxRateBps) || taxRateBps < 0 || taxRateBps > 10_000) {
      throw ValidationError.field(`${where}.tax_rate_bps`, 'tax_rate_bps must be an integer from 0 to 10000.');
    }
    const unitAmountMinor = parseAmount(line.unit_amount, exponent, { field: `${where}.unit_amount`, positive: false });
    const amountMinor = unitAmountMinor * BigInt(line.quantity);
    const taxMinor = taxOf(amountMinor, taxRateBps);
    subtotal += amountMinor;
    tax += taxMinor;
    return { description: line.description, quantity: line.quantity, unitAmountMinor, taxRateBps, amountMinor, taxMinor };
  });
  const total = subtotal + tax;
  if (total > MAX_MINOR) throw ValidationError.field(field, 'The document total is too large.');
  return { lineItems, subtotalMinor: subtotal, taxMinor: tax, totalMinor: total };
}
