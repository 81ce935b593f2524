import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors';
import { MAX_MINOR, formatMinor, minorToNumber, parseAmount, toBigInt } from '../../src/modules/ledger';

function rejection(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error('expected a ValidationError');
}

describe('parseAmount', () => {
  it('converts numbers and decimal strings for every exponent', () => {
    expect(parseAmount(1500, 0)).toBe(1500n);
    expect(parseAmount('1500', 0)).toBe(1500n);
    expect(parseAmount(12.5, 2)).toBe(1250n);
    expect(parseAmount('12.50', 2)).toBe(1250n);
    expect(parseAmount(0.01, 2)).toBe(1n);
    expect(parseAmount(1.234, 3)).toBe(1234n);
    expect(parseAmount('0.001', 3)).toBe(1n);
    expect(parseAmount(7, 3)).toBe(7000n);
    expect(parseAmount('1.0001', 4)).toBe(10001n);
  });

  it('rejects amounts finer than the currency allows', () => {
    expect(rejection(() => parseAmount(1.5, 0)).details).toEqual([{ field: 'amount', message: expect.stringContaining('whole number') }]);
    expect(rejection(() => parseAmount(0.001, 2)).message).toMatch(/more than 2 decimal places/);
    expect(rejection(() => parseAmount('10.005', 2)).message).toMatch(/more than 2 decimal places/);
    expect(rejection(() => parseAmount(0.0001, 3)).message).toMatch(/more than 3 decimal places/);
    // Trailing zeros are not extra precision.
    expect(parseAmount('1.500', 2)).toBe(150n);
    expect(parseAmount('3.000', 0)).toBe(3n);
  });

  it('never drifts like float arithmetic', () => {
    // 0.1 + 0.2 as a client would compute it is not a 2-decimal amount: refused, not rounded.
    expect(rejection(() => parseAmount(0.1 + 0.2, 2)).message).toMatch(/decimal places/);
    // Classic multiplication traps: 1.15 * 100 = 114.99999999999999, 4.35 * 100 = 434.99999999999994.
    expect(parseAmount(1.15, 2)).toBe(115n);
    expect(parseAmount(4.35, 2)).toBe(435n);
    expect(parseAmount(1.005, 3)).toBe(1005n);
    expect(parseAmount(0.07, 2)).toBe(7n);
    expect(parseAmount(8.2, 2)).toBe(820n);
  });

  it('reads exponent notation without floats', () => {
    // String(1e-7) is "1e-7": seven decimals, finer than any currency.
    expect(rejection(() => parseAmount(1e-7, 2)).message).toMatch(/decimal places/);
    expect(rejection(() => parseAmount(1e-7, 4)).message).toMatch(/decimal places/);
    expect(parseAmount(1e-3, 3)).toBe(1n);
    expect(parseAmount('1.5e2', 0)).toBe(150n);
    expect(parseAmount('2.5E-1', 2)).toBe(25n);
    // String(1e15) is "1000000000000000", String(1e21) is "1e+21".
    expect(parseAmount(1e15, 0)).toBe(1_000_000_000_000_000n);
    expect(parseAmount('1e+18', 0)).toBe(1_000_000_000_000_000_000n);
  });

  it('refuses zero, negatives, non-numbers and out-of-range values', () => {
    expect(rejection(() => parseAmount(0, 2)).message).toMatch(/greater than zero/);
    expect(parseAmount(0, 2, { positive: false })).toBe(0n);
    expect(rejection(() => parseAmount(-5, 2)).message).toMatch(/negative/);
    expect(rejection(() => parseAmount('abc', 2)).message).toMatch(/decimal number/);
    expect(rejection(() => parseAmount('1,5', 2)).message).toMatch(/decimal number/);
    expect(rejection(() => parseAmount('', 2)).message).toMatch(/decimal number/);
    expect(rejection(() => parseAmount(Number.NaN, 2)).message).toMatch(/finite/);
    expect(rejection(() => parseAmount(Number.POSITIVE_INFINITY, 2)).message).toMatch(/finite/);
    expect(rejection(() => parseAmount(null, 2)).message).toMatch(/must be a number/);
    expect(rejection(() => parseAmount({}, 2)).message).toMatch(/must be a number/);
    // A JSON number beyond 2^53 minor units cannot carry the client's exact digits.
    expect(rejection(() => parseAmount(1e21, 0)).message).toMatch(/too large/);
    expect(rejection(() => parseAmount(90071992547409.92, 2)).message).toMatch(/too large/);
    // As a string it is exact, up to the bigint limit.
    expect(parseAmount('9223372036854775807', 0)).toBe(MAX_MINOR);
    expect(parseAmount('92233720368547758.07', 2)).toBe(MAX_MINOR);
    expect(rejection(() => parseAmount('9223372036854775808', 0)).message).toMatch(/too large/);
    expect(rejection(() => parseAmount('1e400', 0)).message).toMatch(/out of range|too large/);
    expect(rejection(() => parseAmount(-1, 2, { field: 'price' })).details).toEqual([{ field: 'price', message: expect.any(String) }]);
  });

  it('agrees with exact integer arithmetic for every representable amount (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4 }), fc.bigInt({ min: 1n, max: BigInt(Number.MAX_SAFE_INTEGER) }), (exponent, minor) => {
        const text = formatMinor(minor, exponent);
        expect(parseAmount(text, exponent)).toBe(minor);
        // Every amount of up to 15 significant digits survives the trip through a JSON number.
        if (text.replace('.', '').replace(/^0+/, '').length <= 15) {
          const json = JSON.parse(JSON.stringify(minorToNumber(minor, exponent))) as number;
          expect(parseAmount(json, exponent)).toBe(minor);
        }
      }),
    );
  });
});

describe('parseAmount at its edges', () => {
  /** The one field issue of the refusal, exactly. */
  const issue = (fn: () => unknown) => {
    const error = rejection(fn);
    expect(error.code).toBe('ValidationError');
    expect(error.details).toHaveLength(1);
    expect((error.details as Array<{ field: string; message: string }>)[0]?.message).toBe(error.message);
    return (error.details as Array<{ field: string; message: string }>)[0];
  };

  it('bounds the exponent of scientific notation before building any digits', () => {
    // Without the bound, '1e999999999' would build a billion-character string.
    expect(issue(() => parseAmount('1e999999999', 0))).toEqual({ field: 'amount', message: 'amount is out of range.' });
    expect(issue(() => parseAmount('1e-999999999', 2))).toEqual({ field: 'amount', message: 'amount is out of range.' });
    expect(issue(() => parseAmount('1e99999999999999999999', 0))).toEqual({ field: 'amount', message: 'amount is out of range.' });
    // 400 is the last exponent read; beyond it the value is refused whatever its digits.
    expect(issue(() => parseAmount('0e401', 0, { positive: false }))).toEqual({ field: 'amount', message: 'amount is out of range.' });
    expect(issue(() => parseAmount('0e-401', 0, { positive: false }))).toEqual({ field: 'amount', message: 'amount is out of range.' });
    expect(parseAmount('0e400', 0, { positive: false })).toBe(0n);
    expect(parseAmount('0e-400', 0, { positive: false })).toBe(0n);
    expect(issue(() => parseAmount('1e400', 0))).toEqual({ field: 'amount', message: 'amount is too large.' });
    expect(issue(() => parseAmount('1e-400', 2))).toEqual({ field: 'amount', message: 'amount has more than 2 decimal places, finer than the currency allows.' });
  });

  it('anchors both number patterns at both ends', () => {
    const notDecimal = { field: 'amount', message: 'amount must be a decimal number such as "12.50".' };
    for (const text of ['x1e2', '1e2abc', 'x12', '12x', '12.5.1', '1e', 'e2', '1e2.5', '.5', '12.', '1 000', '--5', '+-5', '0x10']) {
      expect(issue(() => parseAmount(text, 2)), text).toEqual(notDecimal);
    }
  });

  it('places the decimal point of scientific notation exactly', () => {
    expect(parseAmount('5e-1', 1)).toBe(5n); // point at the very start: 0.5
    expect(parseAmount('5e-2', 2)).toBe(5n); // 0.05
    expect(parseAmount('5e0', 0)).toBe(5n); // point at the very end
    expect(parseAmount('5e2', 0)).toBe(500n); // zeros appended
    expect(parseAmount('1.25e1', 1)).toBe(125n); // point inside the digits: 12.5
    expect(parseAmount('12.5e-1', 3)).toBe(1250n); // 1.25
    expect(parseAmount('15E+1', 0)).toBe(150n);
    expect(parseAmount('2.50e1', 0)).toBe(25n);
    expect(parseAmount(' 7.5 ', 1)).toBe(75n);
  });

  it('reads signs: a negative zero is zero, a plus sign is nothing', () => {
    expect(parseAmount('-0', 2, { positive: false })).toBe(0n);
    expect(parseAmount('-0.00', 2, { positive: false })).toBe(0n);
    expect(parseAmount(-0, 2, { positive: false })).toBe(0n);
    expect(issue(() => parseAmount('-0', 2))).toEqual({ field: 'amount', message: 'amount must be greater than zero.' });
    expect(issue(() => parseAmount('-0.01', 2, { positive: false }))).toEqual({ field: 'amount', message: 'amount must not be negative.' });
    expect(parseAmount('+5', 0)).toBe(5n);
    expect(parseAmount('+1.5', 1)).toBe(15n);
  });

  it('takes JSON numbers up to 2^53 - 1 minor units and no further; strings and bigints further', () => {
    const tooLargeForJson = { field: 'amount', message: 'amount is too large to be represented exactly as a JSON number.' };
    expect(parseAmount(Number.MAX_SAFE_INTEGER, 0)).toBe(9_007_199_254_740_991n);
    expect(issue(() => parseAmount(Number.MAX_SAFE_INTEGER + 1, 0))).toEqual(tooLargeForJson);
    expect(parseAmount(90071992547409.9, 2)).toBe(9_007_199_254_740_990n);
    expect(issue(() => parseAmount(90071992547409.92, 2))).toEqual(tooLargeForJson);
    expect(parseAmount('9007199254740992', 0)).toBe(9_007_199_254_740_992n);
    expect(parseAmount(9_007_199_254_740_993n, 0)).toBe(9_007_199_254_740_993n);
    expect(issue(() => parseAmount(MAX_MINOR + 1n, 0))).toEqual({ field: 'amount', message: 'amount is too large.' });
  });

  it('names the field and the currency rule in every refusal', () => {
    expect(issue(() => parseAmount(1.5, 0, { field: 'price' }))).toEqual({
      field: 'price',
      message: 'price must be a whole number in this currency (it has no minor unit).',
    });
    expect(issue(() => parseAmount('1.0001', 3, { field: 'price' }))).toEqual({
      field: 'price',
      message: 'price has more than 3 decimal places, finer than the currency allows.',
    });
    expect(issue(() => parseAmount(Number.NaN, 2, { field: 'price' }))).toEqual({ field: 'price', message: 'price must be a finite number.' });
    expect(issue(() => parseAmount(true, 2, { field: 'price' }))).toEqual({ field: 'price', message: 'price must be a number.' });
    expect(issue(() => parseAmount('   ', 2, { field: 'price' }))).toEqual({ field: 'price', message: 'price must be a decimal number such as "12.50".' });
  });

  it('reads strings of up to 64 characters', () => {
    expect(parseAmount(`${'0'.repeat(63)}1`, 0)).toBe(1n);
    expect(parseAmount(`  ${'0'.repeat(63)}1  `, 0)).toBe(1n);
    expect(issue(() => parseAmount(`${'0'.repeat(64)}1`, 0))).toEqual({ field: 'amount', message: 'amount must be a decimal number such as "12.50".' });
  });

  it('accepts currency exponents 0 to 18 only', () => {
    expect(parseAmount('1', 18)).toBe(10n ** 18n);
    for (const exponent of [-1, 19, 1.5, Number.NaN]) {
      expect(() => parseAmount('1', exponent), String(exponent)).toThrow(new RangeError(`bad currency exponent ${exponent}`));
    }
  });
});

describe('toBigInt', () => {
  it('reads bigint columns as pg returns them, and refuses unsafe numbers', () => {
    expect(toBigInt('9223372036854775807')).toBe(MAX_MINOR);
    expect(toBigInt('-42')).toBe(-42n);
    expect(toBigInt(42)).toBe(42n);
    expect(toBigInt(7n)).toBe(7n);
    expect(toBigInt(Number.MAX_SAFE_INTEGER)).toBe(9_007_199_254_740_991n);
    expect(() => toBigInt(Number.MAX_SAFE_INTEGER + 1)).toThrow(new RangeError(`unsafe integer ${Number.MAX_SAFE_INTEGER + 1}`));
    expect(() => toBigInt(1.5)).toThrow(RangeError);
  });
});

describe('formatMinor', () => {
  it('pads and signs', () => {
    expect(formatMinor(0n, 2)).toBe('0.00');
    expect(formatMinor(5n, 2)).toBe('0.05');
    expect(formatMinor(1050n, 2)).toBe('10.50');
    expect(formatMinor(-1050n, 2)).toBe('-10.50');
    expect(formatMinor(1000000n, 0)).toBe('1000000');
    expect(formatMinor(1n, 3)).toBe('0.001');
    expect(minorToNumber(1050n, 2)).toBe(10.5);
    expect(minorToNumber(MAX_MINOR, 0)).toBeGreaterThan(9e18);
  });

  it('keeps the sign and the padding of small and negative amounts in every exponent', () => {
    expect(formatMinor(-5n, 0)).toBe('-5');
    expect(formatMinor(-5n, 2)).toBe('-0.05');
    expect(formatMinor(-100n, 2)).toBe('-1.00');
    expect(formatMinor(0n, 0)).toBe('0');
    expect(formatMinor(123n, 3)).toBe('0.123');
    expect(formatMinor(1234n, 3)).toBe('1.234');
    expect(formatMinor(MAX_MINOR, 2)).toBe('92233720368547758.07');
    expect(minorToNumber(-1050n, 2)).toBe(-10.5);
    expect(minorToNumber(5n, 3)).toBe(0.005);
  });
});
