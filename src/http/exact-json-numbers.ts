import { isLosslessNumber, parse as parseLossless, type LosslessNumber } from 'lossless-json';
import { ValidationError, type FieldIssue } from '../errors';

/**
 * JSON.parse turns every number into the nearest double: `100.0000000000000001` arrives as
 * 100, and no later check can tell it was finer than the currency allows. This check reads
 * the number tokens as written (an exact tokenizer, lossless-json) and refuses, with 400 and
 * the field named, a body holding a number whose digits the double does not give back: the
 * API would otherwise act on a value the client did not write. Numbers that survive are
 * those the client wrote (`0.1`, `12.50`, `1e3`); finer-than-currency checks see them as such.
 */

/** Only a number with 16+ significant digits or an exponent can fail to round-trip. */
const MAY_BE_INEXACT = /(?:[0-9]\.?){16,}|[0-9][eE][+-]?[0-9]/;

/**
 * The longest number token read: no amount, count or rate needs more (a 15-digit amount with a
 * sign, a point and an exponent is 22 characters). A longer token is refused on its field before
 * any digit work, so a body of one 100 KB number costs what its tokenizing costs.
 */
export const MAX_NUMBER_LENGTH = 40;

/** How many `0` characters end `digits`, counted from the end in one pass (a `/0+$/` retries from every zero: quadratic). */
function trailingZeros(digits: string): number {
  let end = digits.length;
  while (end > 0 && digits.charCodeAt(end - 1) === 48) end -= 1;
  return digits.length - end;
}

/** `-0012.3400e2` -> `-1234`: the decimal value in one spelling (digits without leading or trailing zeros, and a power of ten). */
export function canonicalDecimal(text: string): string {
  const match = /^(-?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?$/.exec(text.trim());
  if (!match) return text;
  const [, sign, int = '', frac = '', exp = '0'] = match;
  let digits = `${int}${frac}`.replace(/^0+/, '');
  if (digits === '') return '0';
  let power = Number(exp) - frac.length;
  const trailing = trailingZeros(digits);
  digits = digits.slice(0, digits.length - trailing);
  power += trailing;
  return `${sign}${digits}e${power}`;
}

/** Whether the double nearest to `written` prints back as the same decimal value. */
export function roundTrips(written: string): boolean {
  const value = Number(written);
  return Number.isFinite(value) && canonicalDecimal(String(value)) === canonicalDecimal(written);
}

function collectInexact(value: unknown, path: string, issues: FieldIssue[]): void {
  if (issues.length >= 100) return;
  if (isLosslessNumber(value)) {
    const written = (value as LosslessNumber).value;
    if (written.length > MAX_NUMBER_LENGTH) {
      issues.push({ field: path, message: `The number is ${written.length} characters long: send at most ${MAX_NUMBER_LENGTH}.` });
    } else if (!roundTrips(written)) {
      issues.push({ field: path, message: `${written} has more digits than can be read exactly: send at most 15 significant digits, and no more decimals than the field allows.` });
    }
  } else if (Array.isArray(value)) {
    value.forEach((item, index) => collectInexact(item, `${path}.${index}`, issues));
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) collectInexact(item, `${path}.${key}`, issues);
  }
}

/**
 * express.json's `verify` hook: throws a ValidationError (400) when the raw body holds a number
 * that JSON.parse would change. Malformed JSON is left to the body parser's own error.
 */
export function refuseInexactNumbers(_req: unknown, _res: unknown, raw: Buffer, encoding: string): void {
  const text = raw.toString((encoding || 'utf8') as BufferEncoding);
  if (!MAY_BE_INEXACT.test(text)) return;
  let parsed: unknown;
  try {
    parsed = parseLossless(text);
  } catch {
    return;
  }
  const issues: FieldIssue[] = [];
  collectInexact(parsed, 'body', issues);
  if (issues.length) throw new ValidationError(`A number in the body cannot be read exactly (${issues[0]?.field}).`, issues);
}
