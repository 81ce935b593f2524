import { isValidPhoneNumber } from 'libphonenumber-js';
import { ValidationError } from '../../errors';
import { checkIban, looksLikeIban } from '../../iban';
import { readPartyIdentifier } from '../auth';
import type { TransferRail } from './transfers-repository';

/** What a `recipientIdentifier` is, before looking anybody up. */
export type ParsedIdentifier =
  | { kind: 'email'; value: string }
  | { kind: 'phone'; value: string }
  | { kind: 'iban'; value: string };

const FIELD = 'body.recipientIdentifier';

/**
 * Reads an identifier: an e-mail (lower-cased), an E.164 telephone number (spaces, dashes,
 * dots and parentheses removed) or an IBAN (upper case, spaces removed, checksum verified).
 * `rail` narrows what is acceptable; anything else is a 400 ValidationError.
 */
export function parseIdentifier(raw: string, rail: TransferRail | undefined): ParsedIdentifier {
  const text = raw.trim();
  // E-mail and telephone: the auth module's one parser.
  const party = readPartyIdentifier(text, { path: FIELD, name: 'recipientIdentifier' });
  if (party?.kind === 'email') {
    if (rail === 'bank' || rail === 'mobile_money') throw railMismatch(rail);
    return { kind: 'email', value: party.email };
  }
  if (party?.kind === 'phone') {
    if (rail === 'bank') throw railMismatch(rail);
    if (rail === 'mobile_money' && !isValidPhoneNumber(party.phone)) {
      throw ValidationError.field(FIELD, 'recipientIdentifier is not a valid telephone number for its country.');
    }
    return { kind: 'phone', value: party.phone };
  }
  if (looksLikeIban(text) || rail === 'bank') {
    if (rail === 'p2p' || rail === 'mobile_money') throw railMismatch(rail);
    const check = checkIban(text);
    if (!check.valid) throw ValidationError.field(FIELD, `recipientIdentifier ${check.reason}.`);
    return { kind: 'iban', value: check.iban };
  }
  if (rail) throw railMismatch(rail);
  throw ValidationError.field(FIELD, 'recipientIdentifier must be an e-mail address, an E.164 telephone number (+2250700009999) or an IBAN.');
}

function railMismatch(rail: TransferRail): ValidationError {
  const expected = { p2p: "a platform user's e-mail or telephone number", bank: 'an IBAN', mobile_money: 'an E.164 mobile-money number' }[rail];
  return ValidationError.field(FIELD, `With rail "${rail}", recipientIdentifier must be ${expected}.`);
}
