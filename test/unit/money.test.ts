import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors';
import { MAX_MINOR, formatMinor, minorToNumber, parseAmount } from '../../src/modules/ledger';

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
});
