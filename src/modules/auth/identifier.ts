import { ValidationError } from '../../errors';

/** A party named by its e-mail (lower-cased) or its telephone number (E.164, as stored in users.phone). */
export type PartyIdentifier = { kind: 'email'; email: string } | { kind: 'phone'; phone: string };
/** The identifier of a login: a party identifier. */
export type LoginIdentifier = PartyIdentifier;

/** Where an identifier came from, for the 400 that refuses it: `body.recipientIdentifier` and its name. */
export interface IdentifierField {
  /** The field path of the ValidationError, e.g. `body.counterparty_identifier`. */
  path: string;
  /** How messages call it, e.g. `counterparty_identifier`. */
  name: string;
}

// The only e-mail and telephone shapes of the code base (ESLint refuses an e-mail regex elsewhere).
const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]{2,}$/;
const E164 = /^\+[1-9][0-9]{6,14}$/;
const MAX_EMAIL_LENGTH = 254;

/**
 * Reads `raw` as a party identifier when it has the shape of one: anything with an `@` is an
 * e-mail (lower-cased; at most 254 characters, checked before the pattern so that it never
 * backtracks over an overlong domain), a `+` or `00` followed by digits (spaces, dots, dashes
 * and brackets allowed) a telephone number normalised to E.164. Returns undefined when `raw`
 * has neither shape (a caller that also takes IBANs tries those next); throws a 400 naming
 * `field` when it has one of them but is not valid.
 */
export function readPartyIdentifier(raw: string, field: IdentifierField): PartyIdentifier | undefined {
  const text = raw.trim();
  if (text.includes('@')) {
    if (text.length > MAX_EMAIL_LENGTH || !EMAIL.test(text)) throw ValidationError.field(field.path, `${field.name} is not a valid e-mail address.`);
    return { kind: 'email', email: text.toLowerCase() };
  }
  const compact = text.replace(/[\s().-]/g, '');
  const phone = compact.startsWith('00') ? `+${compact.slice(2)}` : compact;
  if (!/^\+[0-9]+$/.test(phone)) return undefined;
  if (!E164.test(phone)) throw ValidationError.field(field.path, `${field.name} must be an E.164 telephone number such as +2250700009999.`);
  return { kind: 'phone', phone };
}

/**
 * The one identifier parser: an e-mail address or an E.164 telephone number, for
 * login, transfer recipients, escrow counterparties and tontine invitations. Anything else: 400.
 */
export function parsePartyIdentifier(raw: string, field: IdentifierField): PartyIdentifier {
  const identifier = readPartyIdentifier(raw, field);
  if (!identifier) throw ValidationError.field(field.path, `${field.name} must be an e-mail address or an E.164 telephone number such as +2250700009999.`);
  return identifier;
}

const LOGIN_FIELD: IdentifierField = { path: 'body.identifier', name: 'identifier' };

/** The identifier of POST /auth/login. */
export function parseLoginIdentifier(raw: string): LoginIdentifier {
  return parsePartyIdentifier(raw, LOGIN_FIELD);
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

/**
 * `o***@demo.example`, `+225******01`: a party identifier shown to someone who may recognise
 * the person but not harvest the contact (members seen by non-admins, events).
 */
export function maskPartyIdentifier(identifier: string): string {
  const at = identifier.lastIndexOf('@');
  if (at > 0) return `${identifier.slice(0, 1)}***${identifier.slice(at)}`;
  if (identifier.startsWith('+') && identifier.length > 6) return `${identifier.slice(0, 4)}${'*'.repeat(identifier.length - 6)}${identifier.slice(-2)}`;
  return '***';
}
