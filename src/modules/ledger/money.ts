import { ValidationError } from '../../errors';

/**
 * Amounts at the API edge. Storage and arithmetic use integer minor units as `bigint`; a
 * JS number only ever appears as the JSON value a client sent, and it is converted through
 * its decimal string representation (the shortest string that round-trips, which is what
 * the client wrote for every ordinary amount), never through float multiplication.
 */

/** Largest value of a PostgreSQL bigint. */
export const MAX_MINOR = 9_223_372_036_854_775_807n;

export interface ParseAmountOptions {
  /** Field name used in the error details. */
  field?: string;
  /** Refuse zero (default true: amounts that move money are positive). */
  positive?: boolean;
}

const DECIMAL = /^(\d+)(?:\.(\d+))?$/;
const SCIENTIFIC = /^(\d+)(?:\.(\d+))?e([+-]?\d+)$/i;

function invalid(field: string, message: string): ValidationError {
  return ValidationError.field(field, message);
}

/**
 * Turns the digits of a non-negative decimal written as `int.frac * 10^exp10` into a plain
 * integer part and fraction part, still as strings.
 */
function shift(intPart: string, fracPart: string, exp10: number): { int: string; frac: string } {
  const digits = intPart + fracPart;
  const point = intPart.length + exp10;
  if (point <= 0) return { int: '0', frac: '0'.repeat(-point) + digits };
  if (point >= digits.length) return { int: digits + '0'.repeat(point - digits.length), frac: '' };
  return { int: digits.slice(0, point), frac: digits.slice(point) };
}

/**
 * Parses an API amount (a JSON number or a decimal string such as "12.50") into minor units
 * of a currency whose minor-unit exponent is `exponent` (XOF 0, EUR 2, KWD 3).
 * Throws ValidationError when the value is not a finite positive decimal, is finer than the
 * currency allows (1.5 XOF, 0.001 EUR), or does not fit a bigint. A JSON number above
 * 2^53 - 1 minor units is refused because the client's digits cannot be known exactly.
 */
export function parseAmount(value: unknown, exponent: number, options: ParseAmountOptions = {}): bigint {
  const field = options.field ?? 'amount';
  const positive = options.positive ?? true;
  if (!Number.isInteger(exponent) || exponent < 0 || exponent > 18) throw new RangeError(`bad currency exponent ${exponent}`);
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalid(field, `${field} must be a finite number.`);
    text = String(value);
  } else if (typeof value === 'string') {
    text = value.trim();
    if (text.length === 0 || text.length > 64) throw invalid(field, `${field} must be a decimal number such as "12.50".`);
  } else if (typeof value === 'bigint') {
    text = value.toString();
  } else {
    throw invalid(field, `${field} must be a number.`);
  }

  let negative = false;
  if (text.startsWith('-')) {
    negative = true;
    text = text.slice(1);
  } else if (text.startsWith('+')) {
    text = text.slice(1);
  }

  let intPart: string;
  let fracPart: string;
  const decimal = DECIMAL.exec(text);
  const scientific = decimal ? null : SCIENTIFIC.exec(text);
  if (decimal) {
    intPart = decimal[1] as string;
    fracPart = decimal[2] ?? '';
  } else if (scientific) {
    const exp10 = Number(scientific[3]);
    if (!Number.isSafeInteger(exp10) || Math.abs(exp10) > 400) throw invalid(field, `${field} is out of range.`);
    ({ int: intPart, frac: fracPart } = shift(scientific[1] as string, scientific[2] ?? '', exp10));
  } else {
    throw invalid(field, `${field} must be a decimal number such as "12.50".`);
  }

  // Trailing zeros counted from the end in one pass (a `/0+$/` retries from every zero: quadratic).
  let fractionEnd = fracPart.length;
  while (fractionEnd > 0 && fracPart.charCodeAt(fractionEnd - 1) === 48) fractionEnd -= 1;
  const significantFraction = fracPart.slice(0, fractionEnd);
  if (significantFraction.length > exponent) {
    throw invalid(
      field,
      exponent === 0
        ? `${field} must be a whole number in this currency (it has no minor unit).`
        : `${field} has more than ${exponent} decimal places, finer than the currency allows.`,
    );
  }
  const minor = BigInt(intPart + significantFraction.padEnd(exponent, '0'));

  if (negative && minor !== 0n) throw invalid(field, `${field} must not be negative.`);
  if (positive && minor === 0n) throw invalid(field, `${field} must be greater than zero.`);
  if (minor > MAX_MINOR) throw invalid(field, `${field} is too large.`);
  if (typeof value === 'number' && minor > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw invalid(field, `${field} is too large to be represented exactly as a JSON number.`);
  }
  return minor;
}

/** Minor units to a plain decimal string with exactly `exponent` decimals: 1050n, 2 -> "10.50". */
export function formatMinor(minor: bigint, exponent: number): string {
  const negative = minor < 0n;
  const digits = (negative ? -minor : minor).toString().padStart(exponent + 1, '0');
  const int = digits.slice(0, digits.length - exponent);
  const frac = digits.slice(digits.length - exponent);
  return `${negative ? '-' : ''}${int}${exponent > 0 ? `.${frac}` : ''}`;
}

/**
 * Minor units to a JSON number for responses (10.5 for 1050n at exponent 2). The number is
 * the nearest double to the decimal, so it is exact for every value up to 15 significant
 * digits; responses also carry the exact minor units as a string.
 */
export function minorToNumber(minor: bigint, exponent: number): number {
  return Number(formatMinor(minor, exponent));
}

/** Parses a bigint column (pg returns int8 as a string). */
export function toBigInt(value: string | number | bigint): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new RangeError(`unsafe integer ${value}`);
    return BigInt(value);
  }
  return BigInt(value);
}
