import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { ValidationError } from '../../errors';

export type LoginIdentifier = { kind: 'email'; email: string } | { kind: 'phone'; phone: string };

const EMAIL = /^[^\s@]+@[^\s@]+$/;

/**
 * An e-mail address (compared lower-cased) or a telephone number in international form
 * (`+` or `00` and the country code, spaces, dots, dashes and brackets allowed), normalised
 * to E.164 as stored in users.phone.
 */
export function parseLoginIdentifier(raw: string): LoginIdentifier {
  const value = raw.trim();
  if (value.includes('@')) {
    if (!EMAIL.test(value)) throw ValidationError.field('body.identifier', 'must be an e-mail address or a telephone number');
    return { kind: 'email', email: value.toLowerCase() };
  }
  const international = value.startsWith('00') ? `+${value.slice(2)}` : value;
  const phone = international.startsWith('+') ? parsePhoneNumberFromString(international) : undefined;
  if (!phone || !phone.isPossible()) {
    throw ValidationError.field(
      'body.identifier',
      'must be an e-mail address or a telephone number in international form (for example +2250700000000)',
    );
  }
  return { kind: 'phone', phone: phone.number };
}

/**
 * The account a login attempt targets, for per-identifier rate limiting: every spelling of
 * one telephone number (spaces, dashes, `00` or `+`) and every case of one e-mail address
 * share one bucket, so reformatting the identifier does not buy more attempts.
 */
export function loginIdentifierKey(raw: string): string {
  try {
    const identifier = parseLoginIdentifier(raw);
    return identifier.kind === 'email' ? identifier.email : identifier.phone;
  } catch {
    return raw.trim().toLowerCase().slice(0, 320);
  }
}
