import type { PiiCipher } from '../../pii-cipher';

/**
 * A person's name is personal data: `users.display_name` holds it sealed by the PII cipher,
 * bound to its user (a value copied to another row does not open). No route shows it.
 */
export function displayNameContext(userId: string): string {
  return `users.display_name:${userId}`;
}

export function sealDisplayName(cipher: PiiCipher, userId: string, name: string): string {
  return cipher.sealText(name, displayNameContext(userId));
}

export function openDisplayName(cipher: PiiCipher, userId: string, sealed: string): string {
  return cipher.openText(sealed, displayNameContext(userId));
}
