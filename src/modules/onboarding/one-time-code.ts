import crypto from 'node:crypto';

/** A code lives 10 minutes. */
export const CODE_TTL_MS = 10 * 60 * 1000;
/** Five wrong codes spend a verification. */
export const MAX_CODE_ATTEMPTS = 5;

/** Six random digits (leading zeros kept). */
export function newCode(): string {
  return String(crypto.randomInt(0, 1_000_000)).padStart(6, '0');
}

/**
 * One-time codes are kept only as an HMAC keyed by a server secret and bound to their row: a
 * copy of the table alone does not give the codes (six digits would fall to a plain hash in
 * a second), and one code hashes differently in two rows.
 */
export class CodeHasher {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = crypto.createHmac('sha256', secret).update('one-time-codes').digest();
  }

  hash(rowId: string, code: string): string {
    return crypto.createHmac('sha256', this.key).update(`${rowId}:${code}`).digest('hex');
  }

  /** Compared in constant time; anything that is not six digits is wrong without a shortcut in timing. */
  matches(rowId: string, code: string, storedHash: string): boolean {
    const given = Buffer.from(this.hash(rowId, code), 'hex');
    const stored = Buffer.from(storedHash, 'hex');
    return given.length === stored.length && crypto.timingSafeEqual(given, stored) && /^[0-9]{6}$/.test(code);
  }
}

/** The state of a verification row when a code is tried. */
export interface CodeRow {
  id: string;
  code_hash: string;
  attempts: number;
  expires_at: Date;
  completed_at: Date | null;
}

/**
 * What a try of a code decided: the row is spent (expired, used, too many tries), the code is
 * wrong, or right. `counted`: this try was a wrong code on a live row (the caller writes
 * `attempts + 1`). The fifth wrong code is still answered as wrong (`attemptsLeft` 0) and
 * spends the row: every try after it, the right code included, is `expired`.
 */
export type CodeCheck = { outcome: 'expired'; counted: false } | { outcome: 'wrong'; attemptsLeft: number; counted: true } | { outcome: 'right' };

/**
 * Judges `code` against its row at `now`. `usable` false (a sign-up of an identifier that
 * already has an account, a reset of nobody's identifier): no code is right, and the answers
 * are exactly those of a wrong code.
 */
export function checkCode(hasher: CodeHasher, row: CodeRow | undefined, code: string, now: Date, usable = true): CodeCheck {
  if (!row || row.completed_at || row.expires_at.getTime() <= now.getTime() || row.attempts >= MAX_CODE_ATTEMPTS) return { outcome: 'expired', counted: false };
  const right = hasher.matches(row.id, code, row.code_hash);
  if (right && usable) return { outcome: 'right' };
  return { outcome: 'wrong', attemptsLeft: MAX_CODE_ATTEMPTS - (row.attempts + 1), counted: true };
}
