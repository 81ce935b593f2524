/**
 * The one IBAN check of the platform (ISO 13616): format, the country's length where the
 * SWIFT registry (or the widely used "partial IBAN" list of West and Central Africa) knows it,
 * and the mod-97 checksum (the rearranged number modulo 97 is 1). Transfer recipients and
 * organisation accounts both use it.
 */

const LENGTHS: Record<string, number> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BR: 29, BY: 28, CH: 21, CR: 22,
  CY: 28, CZ: 24, DE: 22, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FO: 18, FR: 27, GB: 22, GE: 22,
  GI: 23, GL: 18, GR: 27, GT: 28, HR: 21, HU: 28, IE: 22, IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30, KW: 30,
  KZ: 20, LB: 28, LC: 32, LI: 21, LT: 20, LU: 20, LV: 21, LY: 25, MC: 27, MD: 24, ME: 22, MK: 19, MR: 27,
  MT: 31, MU: 30, NL: 18, NO: 15, PK: 24, PL: 28, PS: 29, PT: 25, QA: 29, RO: 24, RS: 22, SA: 24, SC: 31,
  SD: 18, SE: 24, SI: 19, SK: 24, SM: 27, ST: 25, SV: 28, TL: 23, TN: 24, TR: 26, UA: 29, VA: 22, VG: 24,
  XK: 20,
  // Partial-IBAN countries (UEMOA, CEMAC and neighbours), as banks there issue them.
  BJ: 28, BF: 28, CI: 28, ML: 28, NE: 28, SN: 28, TG: 28, GW: 25, CM: 27, CF: 27, CG: 27, GA: 27, GQ: 27,
  TD: 27, DZ: 26, MA: 28, MG: 27, AO: 25, CV: 25, MZ: 25,
};

export type IbanCheck = { valid: true; iban: string } | { valid: false; reason: string };

/** Upper case without spaces, the form we store. */
export function compactIban(raw: string): string {
  return raw.replace(/[\s-]/g, '').toUpperCase();
}

export function looksLikeIban(raw: string): boolean {
  return /^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$/.test(compactIban(raw));
}

/** Remainder of the IBAN's numeric form modulo 97, computed piecewise (no big numbers). */
export function ibanMod97(iban: string): number {
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const char of rearranged) {
    const digits = /[A-Z]/.test(char) ? String(char.charCodeAt(0) - 55) : char;
    for (const digit of digits) remainder = (remainder * 10 + Number(digit)) % 97;
  }
  return remainder;
}

/** The IBAN in its stored form (compact, upper case) when it is valid, or why it is not. */
export function checkIban(raw: string): IbanCheck {
  const iban = compactIban(raw);
  if (!/^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$/.test(iban)) {
    return { valid: false, reason: 'must be an IBAN: a country code, two check digits and up to 30 letters or digits' };
  }
  const expected = LENGTHS[iban.slice(0, 2)];
  if (expected !== undefined && iban.length !== expected) {
    return { valid: false, reason: `a ${iban.slice(0, 2)} IBAN has ${expected} characters, this one has ${iban.length}` };
  }
  if (ibanMod97(iban) !== 1) return { valid: false, reason: 'the IBAN check digits are wrong (mod-97 checksum failed): check for a typo' };
  return { valid: true, iban };
}

export function isValidIban(raw: string): boolean {
  return checkIban(raw).valid;
}

/** The IBAN of `country` + `bban` with its check digits computed (sandbox examples, tests). */
export function makeIban(country: string, bban: string): string {
  const remainder = ibanMod97(`${country}00${bban}`);
  return `${country}${String(98 - remainder).padStart(2, '0')}${bban}`;
}
