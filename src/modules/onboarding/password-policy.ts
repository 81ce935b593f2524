import { ZxcvbnFactory } from '@zxcvbn-ts/core';
import * as common from '@zxcvbn-ts/language-common';
import * as en from '@zxcvbn-ts/language-en';
import * as fr from '@zxcvbn-ts/language-fr';
import { WeakPasswordError } from './onboarding-errors';

export const MIN_PASSWORD_LENGTH = 10;
/** zxcvbn's score (0 to 4) a password must reach: 3 is "safely unguessable" (about 10^8 guesses and more). */
const MIN_SCORE = 3;

/**
 * The dictionaries a password is checked against: common passwords and words, first and last
 * names in English and French (the platform's users). The Wikipedia lists are left out: they
 * tripled the cost of a check for little.
 */
function dictionaries(): Record<string, string[]> {
  const pick = (dictionary: Record<string, unknown>, names: string[]) => Object.fromEntries(names.map((name) => [name, dictionary[name] as string[]]));
  return {
    ...(common.dictionary as Record<string, string[]>),
    ...pick(en.dictionary, ['commonWords-en', 'firstnames-en', 'lastnames-en']),
    ...pick(fr.dictionary, ['commonWords-fr', 'firstnames-fr', 'lastnames-fr']),
  };
}

let estimator: ZxcvbnFactory | undefined;

/**
 * Built on first use (about a second: the dictionaries are ranked), then shared. Only the first
 * 64 characters are scored and l33t substitutions are capped, which bounds the cost of a check
 * (a long password is strong enough by length).
 */
function zxcvbn(): ZxcvbnFactory {
  estimator ??= new ZxcvbnFactory({ dictionary: dictionaries(), graphs: common.adjacencyGraphs, translations: en.translations, maxLength: 64, l33tMaxSubstitutions: 16 });
  return estimator;
}

/** The parts of who the user is that a password must not contain (an e-mail's local part, a number's digits, the words of a name). */
function personalParts(personal: readonly string[]): string[] {
  const parts = new Set<string>();
  for (const value of personal) {
    const text = value.toLowerCase().trim();
    if (!text) continue;
    parts.add(text);
    if (text.includes('@')) parts.add(text.slice(0, text.indexOf('@')));
    const digits = text.replace(/[^0-9]/g, '');
    // The national number: a telephone number without its country code is still the number.
    if (digits.length >= 7) parts.add(digits.slice(-8));
    for (const word of text.split(/[^\p{L}\p{N}]+/u)) if (word.length >= 4) parts.add(word);
  }
  return [...parts].filter((part) => part.length >= 4);
}

/**
 * Refuses a password that is shorter than 10 characters, contains the user's identifier (or
 * name), or that zxcvbn judges common or easy to guess (a maintained strength estimator: common
 * passwords, words, names, keyboard walks, dates, repeats, l33t). Throws 422 WeakPassword with
 * the reason.
 */
export function assertStrongPassword(password: string, personal: readonly string[]): void {
  if ([...password].length < MIN_PASSWORD_LENGTH) throw new WeakPasswordError('too_short');
  const lower = password.toLowerCase();
  const parts = personalParts(personal);
  if (parts.some((part) => lower.includes(part))) throw new WeakPasswordError('contains_identifier');
  if (zxcvbn().check(password, parts).score < MIN_SCORE) throw new WeakPasswordError('too_common');
}
