import { describe, expect, it } from 'vitest';
import {
  generateLinkCode,
  isLinkCode,
  issueFormToken,
  randomNonce,
  readFormToken,
  receiptToken,
  signAmount,
  verifyAmountSignature,
  verifyReceiptToken,
  type FormTokenPayload,
} from '../../src/modules/payment-links/link-security';
import { purposeMac } from '../../src/signing';

const SECRET = 'a-pay-secret-of-at-least-thirty-two-characters';
const OTHER_SECRET = 'another-pay-secret-of-thirty-two-characters!';
const PAYMENT_ID = '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b';
const OTHER_PAYMENT_ID = '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4c';

/** Flips one character of a base64url text, keeping its length and alphabet. */
function altered(text: string, at = 0): string {
  const flipped = text[at] === 'A' ? 'B' : 'A';
  return `${text.slice(0, at)}${flipped}${text.slice(at + 1)}`;
}

describe('link codes and nonces', () => {
  it('are random base64url texts of 32 and 24 characters', () => {
    const codes = new Set(Array.from({ length: 50 }, generateLinkCode));
    expect(codes.size).toBe(50);
    for (const code of codes) {
      expect(code).toMatch(/^[A-Za-z0-9_-]{32}$/);
      expect(isLinkCode(code)).toBe(true);
    }
    expect(randomNonce()).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(randomNonce()).not.toBe(randomNonce());
  });

  it('accepts 22 to 64 URL-safe characters as a code, nothing else', () => {
    expect(isLinkCode('a'.repeat(22))).toBe(true);
    expect(isLinkCode('Z9_-'.repeat(16))).toBe(true);
    expect(isLinkCode('a'.repeat(21))).toBe(false);
    expect(isLinkCode('a'.repeat(65))).toBe(false);
    expect(isLinkCode(`${'a'.repeat(22)}!`)).toBe(false);
    expect(isLinkCode(`!${'a'.repeat(22)}`)).toBe(false);
    expect(isLinkCode(`${'a'.repeat(11)}.${'a'.repeat(11)}`)).toBe(false);
    expect(isLinkCode('')).toBe(false);
  });
});

describe('signed amounts', () => {
  const signed = { linkId: 'link-1', amountMinor: 7500n, reference: 'INV-1', expiresAt: 1_900_000_000 };

  it('verify only with the same link, amount, reference, expiry and secret', () => {
    const sig = signAmount(SECRET, signed);
    expect(sig).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(verifyAmountSignature(SECRET, signed, sig)).toBe(true);
    expect(verifyAmountSignature(SECRET, { ...signed, linkId: 'link-2' }, sig)).toBe(false);
    expect(verifyAmountSignature(SECRET, { ...signed, amountMinor: 75n }, sig)).toBe(false);
    expect(verifyAmountSignature(SECRET, { ...signed, reference: 'INV-2' }, sig)).toBe(false);
    expect(verifyAmountSignature(SECRET, { ...signed, expiresAt: signed.expiresAt + 1 }, sig)).toBe(false);
    expect(verifyAmountSignature(OTHER_SECRET, signed, sig)).toBe(false);
    expect(verifyAmountSignature(SECRET, signed, altered(sig))).toBe(false);
    expect(verifyAmountSignature(SECRET, signed, '')).toBe(false);
    // Fields cannot slide into one another: ("ab", "c") and ("a", "bc") sign differently.
    expect(signAmount(SECRET, { ...signed, linkId: 'ab', reference: 'c' })).not.toBe(signAmount(SECRET, { ...signed, linkId: 'a', reference: 'bc' }));
  });
});

describe('form tokens', () => {
  const payload: FormTokenPayload = {
    linkId: 'link-1',
    browserId: 'browser-1',
    amountMinor: 12_500n,
    reference: 'ORDER-1',
    nonce: 'nonce-1',
    issuedAt: 1_800_000_000,
    signedExpiresAt: 1_800_000_600,
  };

  /** A token whose wire payload is `wire`, correctly signed: only the payload checks can refuse it. */
  function signedWire(wire: unknown): string {
    const body = Buffer.from(JSON.stringify(wire)).toString('base64url');
    return `${body}.${purposeMac(SECRET, 'payment-links/form-token', body)}`;
  }

  it('carry their payload back unchanged, with or without amount, reference and expiry', () => {
    expect(readFormToken(SECRET, issueFormToken(SECRET, payload))).toEqual(payload);
    const open = { ...payload, amountMinor: null, reference: null, signedExpiresAt: null };
    expect(readFormToken(SECRET, issueFormToken(SECRET, open))).toEqual(open);
    expect(readFormToken(SECRET, signedWire({ l: 'l', b: 'b', a: '5', n: 'n', t: 1 }))).toEqual({
      linkId: 'l',
      browserId: 'b',
      amountMinor: 5n,
      reference: null,
      nonce: 'n',
      issuedAt: 1,
      signedExpiresAt: null,
    });
  });

  it('are refused when forged, altered, truncated, padded or signed with another secret', () => {
    const token = issueFormToken(SECRET, payload);
    const [body, signature] = token.split('.') as [string, string];
    expect(readFormToken(OTHER_SECRET, token)).toBeNull();
    expect(readFormToken(SECRET, `${altered(body, 5)}.${signature}`)).toBeNull();
    expect(readFormToken(SECRET, `${body}.${altered(signature)}`)).toBeNull();
    expect(readFormToken(SECRET, body)).toBeNull();
    expect(readFormToken(SECRET, `${body}.`)).toBeNull();
    expect(readFormToken(SECRET, `.${signature}`)).toBeNull();
    expect(readFormToken(SECRET, `${token}.${signature}`)).toBeNull();
    expect(readFormToken(SECRET, '')).toBeNull();
    expect(readFormToken(SECRET, undefined as unknown as string)).toBeNull();
    // A receipt signature is no form signature.
    expect(readFormToken(SECRET, `${body}.${purposeMac(SECRET, 'payment-links/receipt', body)}`)).toBeNull();
  });

  it('are refused beyond 2048 characters, even when genuine', () => {
    const long = (length: number) => ({ l: 'l', b: 'b', a: null, r: 'x'.repeat(length), n: 'n', t: 1 });
    // base64url of the JSON plus a 44-character signature part.
    let size = 1400;
    while (signedWire(long(size)).length < 2048) size += 1;
    expect(signedWire(long(size - 1)).length).toBeLessThanOrEqual(2048);
    expect(readFormToken(SECRET, signedWire(long(size - 1)))?.reference).toBe('x'.repeat(size - 1));
    const over = signedWire(long(size + 2));
    expect(over.length).toBeGreaterThan(2048);
    expect(readFormToken(SECRET, over)).toBeNull();
  });

  it('are refused when the signed payload is not a form payload', () => {
    const good = { l: 'l', b: 'b', a: '5', r: null, n: 'n', t: 1, e: null };
    expect(readFormToken(SECRET, signedWire(good))).not.toBeNull();
    for (const [name, wire] of Object.entries({
      'link not a string': { ...good, l: 1 },
      'browser not a string': { ...good, b: null },
      'nonce not a string': { ...good, n: 5 },
      'issued-at not a number': { ...good, t: '1' },
      'amount zero': { ...good, a: '0' },
      'amount with a leading zero': { ...good, a: '05' },
      'amount not digits': { ...good, a: '5x' },
      'amount with text before': { ...good, a: 'x5' },
      'amount of 20 digits': { ...good, a: '1'.repeat(20) },
      'expiry not an integer': { ...good, e: 1.5 },
      'expiry a string': { ...good, e: '1' },
    })) {
      expect(readFormToken(SECRET, signedWire(wire)), name).toBeNull();
    }
    expect(readFormToken(SECRET, signedWire({ ...good, a: '9'.repeat(19) }))?.amountMinor).toBe(9_999_999_999_999_999_999n);
    expect(readFormToken(SECRET, signedWire({ ...good, e: 1_800_000_600 }))?.signedExpiresAt).toBe(1_800_000_600);
    // Signed but not JSON.
    const notJson = Buffer.from('{not json').toString('base64url');
    expect(readFormToken(SECRET, `${notJson}.${purposeMac(SECRET, 'payment-links/form-token', notJson)}`)).toBeNull();
  });
});

describe('receipt tokens', () => {
  it('open the receipt of their own payment only', () => {
    const token = receiptToken(SECRET, PAYMENT_ID);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(receiptToken(SECRET, PAYMENT_ID)).toBe(token);
    expect(verifyReceiptToken(SECRET, PAYMENT_ID, token)).toBe(true);
  });

  it('refuse a missing, empty, forged, foreign or differently signed token', () => {
    const token = receiptToken(SECRET, PAYMENT_ID);
    expect(verifyReceiptToken(SECRET, PAYMENT_ID, undefined as unknown as string)).toBe(false);
    expect(verifyReceiptToken(SECRET, PAYMENT_ID, '')).toBe(false);
    expect(verifyReceiptToken(SECRET, PAYMENT_ID, altered(token))).toBe(false);
    expect(verifyReceiptToken(SECRET, PAYMENT_ID, token.slice(0, -1))).toBe(false);
    expect(verifyReceiptToken(SECRET, PAYMENT_ID, `${token}A`)).toBe(false);
    expect(verifyReceiptToken(SECRET, PAYMENT_ID, receiptToken(SECRET, OTHER_PAYMENT_ID))).toBe(false);
    expect(verifyReceiptToken(SECRET, PAYMENT_ID, receiptToken(OTHER_SECRET, PAYMENT_ID))).toBe(false);
    expect(verifyReceiptToken(SECRET, PAYMENT_ID, purposeMac(SECRET, 'payment-links/form-token', PAYMENT_ID))).toBe(false);
    expect(verifyReceiptToken(SECRET, PAYMENT_ID, [token] as unknown as string)).toBe(false);
  });
});

describe('signatures against known answers (computed with openssl, not with this code)', () => {
  // KEY=$(printf '%s' "payment-links/<purpose>" | openssl dgst -sha256 -hmac "$SECRET" -binary | xxd -p -c 256)
  // printf '%s' "<message>" | openssl dgst -sha256 -mac HMAC -macopt hexkey:$KEY -binary | base64 | tr '+/' '-_' | tr -d '='
  it('signs an amount as HMAC(HMAC(secret, "payment-links/signed-amount"), ["v1", link, amount, reference, expiry])', () => {
    const signed = { linkId: 'link-1', amountMinor: 7500n, reference: 'INV-1', expiresAt: 1_900_000_000 };
    expect(signAmount(SECRET, signed)).toBe('2PiN3BCsajs7TeAmFQyOeWtFtD5YNffPRZ8QtDIhb-Q');
    expect(verifyAmountSignature(SECRET, signed, '2PiN3BCsajs7TeAmFQyOeWtFtD5YNffPRZ8QtDIhb-Q')).toBe(true);
  });

  it('signs a receipt as HMAC(HMAC(secret, "payment-links/receipt"), payment id)', () => {
    expect(receiptToken(SECRET, PAYMENT_ID)).toBe('aN-c-NymEpCETLvF8cIoGsx6Krj-cjM-MWT3SLyHc7o');
    expect(verifyReceiptToken(SECRET, PAYMENT_ID, 'aN-c-NymEpCETLvF8cIoGsx6Krj-cjM-MWT3SLyHc7o')).toBe(true);
  });
});

describe('form token length limit', () => {
  it('reads a genuine token of exactly 2048 characters, not one of 2050', () => {
    const wire = (size: number) => ({ l: 'l', b: 'b', a: null, r: 'x'.repeat(size), n: 'n', t: 1 });
    const token = (size: number) => {
      const body = Buffer.from(JSON.stringify(wire(size))).toString('base64url');
      return `${body}.${purposeMac(SECRET, 'payment-links/form-token', body)}`;
    };
    // The JSON around the reference is 47 bytes: 1456 x's make 1503 bytes, 2004 base64url characters, plus '.' and 43.
    expect(token(1456)).toHaveLength(2048);
    expect(readFormToken(SECRET, token(1456))?.reference).toBe('x'.repeat(1456));
    expect(token(1457)).toHaveLength(2050);
    expect(readFormToken(SECRET, token(1457))).toBeNull();
  });
});
