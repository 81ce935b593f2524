import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { systemClock, type Clock } from '../../clock';
import { withTransaction } from '../../db/transaction';
import { parseLoginIdentifier, sealDisplayName, UserRepository, type IssuedTokens, type PasswordHasher, type SessionClient, type SessionService } from '../auth';
import type { Notifier } from '../notifications';
import type { PiiCipher } from '../../pii-cipher';
import { destination, messages } from './messages';
import { onboardingRepository } from './onboarding-repository';
import { InvalidVerificationCodeError, VerificationExpiredError } from './onboarding-errors';
import { checkCode, CODE_TTL_MS, newCode, type CodeHasher } from './one-time-code';
import { assertStrongPassword } from './password-policy';

export interface SignupInput {
  identifier: string;
  password: string;
  full_name: string;
  country: string;
}

export interface SignupStarted {
  verification_id: string;
  channel: 'sms' | 'email';
  expires_at: string;
}

export interface OnboardingDeps {
  knex: Knex;
  passwords: PasswordHasher;
  sessions: SessionService;
  notifier: Notifier;
  codes: CodeHasher;
  /** Seals the name given at sign-up (in the verification row, then the user's). */
  cipher: PiiCipher;
  clock?: Clock;
}

/** The name in a sign-up verification row is sealed, bound to its row. */
export function signupNameContext(verificationId: string): string {
  return `signup_verifications.full_name:${verificationId}`;
}

type VerifyOutcome = { tokens: IssuedTokens } | { error: Error };

/**
 * Sign-up with a one-time code. Nothing tells who has an account: an identifier that already
 * has one gets the same answer (a verification id, the same channel and expiry, after the same
 * password hash), its message says so instead of carrying a code, and no code ever completes
 * that verification (its tries answer exactly as wrong codes do).
 */
export class SignupService {
  private readonly clock: Clock;

  constructor(private readonly deps: OnboardingDeps) {
    this.clock = deps.clock ?? systemClock;
  }

  async start(input: SignupInput): Promise<SignupStarted> {
    const identifier = parseLoginIdentifier(input.identifier);
    assertStrongPassword(input.password, [input.identifier, destination(identifier).to, input.full_name]);
    // Hashed before anything is read, for every identifier: the time says nothing either.
    const passwordHash = await this.deps.passwords.hash(input.password);
    const id = crypto.randomUUID();
    const code = newCode();
    const expiresAt = new Date(this.clock().getTime() + CODE_TTL_MS);
    const { channel } = destination(identifier);
    await withTransaction(this.deps.knex, async (trx) => {
      const existing = await new UserRepository(trx).findCredentials(identifier);
      await onboardingRepository.insertSignup(trx, {
        id,
        identifier: destination(identifier).to,
        channel,
        code_hash: this.deps.codes.hash(id, code),
        expires_at: expiresAt,
        existing_account: existing !== undefined,
        password_hash: existing ? null : passwordHash,
        full_name: existing ? null : this.deps.cipher.sealText(input.full_name, signupNameContext(id)),
        country: existing ? null : input.country,
      });
      await this.deps.notifier.send(trx, existing ? messages.signupExistingAccount(identifier) : messages.signupCode(identifier, code));
    });
    return { verification_id: id, channel, expires_at: expiresAt.toISOString() };
  }

  /** Deletes sign-up verifications and password resets older than a day (their codes long expired). */
  purgeCodes(): Promise<number> {
    return onboardingRepository.purgeOlderThan(this.deps.knex, 24);
  }

  /**
   * The right code creates the user (tier_0, active) and opens its first session, in one
   * transaction; a wrong one counts (InvalidVerificationCode with the tries left; the fifth
   * spends the verification: VerificationExpired), committed before it is answered.
   */
  async verify(verificationId: string, code: string, client: SessionClient): Promise<IssuedTokens> {
    const outcome = await withTransaction<VerifyOutcome>(this.deps.knex, async (trx) => {
      const row = await onboardingRepository.findSignupForUpdate(trx, verificationId);
      const check = checkCode(this.deps.codes, row, code, this.clock(), row?.existing_account === false);
      if (check.outcome !== 'right' || !row) {
        if (check.outcome !== 'right' && check.counted && row) await onboardingRepository.countWrongSignupCode(trx, row.id);
        return { error: check.outcome === 'wrong' ? new InvalidVerificationCodeError(check.attemptsLeft) : new VerificationExpiredError() };
      }
      const identifier = parseLoginIdentifier(row.identifier);
      const userId = crypto.randomUUID();
      const name = this.deps.cipher.openText(row.full_name as string, signupNameContext(row.id));
      const user = await new UserRepository(trx).create({
        id: userId,
        identifier,
        passwordHash: row.password_hash as string,
        displayNameSealed: sealDisplayName(this.deps.cipher, userId, name),
        country: row.country as string,
        termsAcceptedAt: row.created_at,
      });
      // Someone completed a sign-up of this identifier since this one began: this one is spent.
      await onboardingRepository.completeSignup(trx, row.id, user?.id ?? null);
      if (!user) return { error: new VerificationExpiredError() };
      return { tokens: await this.deps.sessions.open(trx, { id: user.id, is_admin: false }, { client }) };
    });
    if ('error' in outcome) throw outcome.error;
    return outcome.tokens;
  }
}
