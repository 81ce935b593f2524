import { isValid } from 'i18n-iso-countries';

/**
 * Whether `code` is a country's ISO 3166-1 alpha-2 code, upper case, by the maintained list of
 * i18n-iso-countries (the assigned codes, and XK, Kosovo's user-assigned code). A well-formed
 * code nobody is assigned (`ZZ`, `QQ`) is not a country.
 */
export function isCountryCode(code: string): boolean {
  return /^[A-Z]{2}$/.test(code) && isValid(code);
}
