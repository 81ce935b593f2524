import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { systemClock, type Clock } from '../../clock';
import { withTransaction } from '../../db/transaction';
import { UnauthorizedError } from '../../errors';
import { parseLoginIdentifier, UserRepository, type PartyIdentifier } from '../auth';
import { destination, messages } from './messages';
import { onboardingRepository } from './onboarding-repository';
import { InvalidCurrentPasswordError, InvalidVerificationCodeError, VerificationExpiredError, WeakPasswordError } from './onboarding-errors';
import { checkCode, CODE_TTL_MS, newCode } from './one-time-code';
import { assertStrongPassword } from './password-policy';
import type { OnboardingDeps } from './signup-service';

export interface ResetRequested {
  channel: 'sms' | 'email';
  expires_at: string;
}

export interface PasswordChanged {
  sessions_revoked: number;
}

type CodeOutcome = { resetId: string; userId: string } | { error: Error };

/**
 * Password reset with a one-time code, and a change of password by its user. A reset ends
 * every session of the user (an old access token answers 401 from the commit); a change ends
 * every session but the caller's. Either way the user is told on their own channel.
 */
export class PasswordService {
  private readonly clock: Clock;

  constructor(private readonly deps: OnboardingDeps) {
    this.clock = deps.clock ?? systemClock;
  }

  /**
   * Always the same answer. A code goes to an active account's identifier; for anybody else a
   * row is kept all the same (no user, no message), so a confirmation is answered alike.
   */
  async request(identifierText: string): Promise<ResetRequested> {
    const identifier = parseLoginIdentifier(identifierText);
    const { to, channel } = destination(identifier);
    const id = crypto.randomUUID();
    const code = newCode();
    const expiresAt = new Date(this.clock().getTime() + CODE_TTL_MS);
    await withTransaction(this.deps.knex, async (trx) => {
      const user = await new UserRepository(trx).findCredentials(identifier);
      const active = user?.status === 'active' ? user : undefined;
      await onboardingRepository.insertReset(trx, { id, identifier: to, channel, user_id: active?.id ?? null, code_hash: this.deps.codes.hash(id, code), expires_at: expiresAt });
      if (active) await this.deps.notifier.send(trx, messages.passwordResetCode(identifier, code));
    });
    return { channel, expires_at: expiresAt.toISOString() };
  }

  /**
   * The newest code asked for the identifier sets a new password. The code is judged (and a
   * wrong one counted) first; only a right one pays for hashing the new password, outside any
   * transaction; then one transaction spends the code (still unspent under its lock), sets the
   * password and ends every session.
   */
  async confirm(identifierText: string, code: string, newPassword: string): Promise<PasswordChanged> {
    const identifier = parseLoginIdentifier(identifierText);
    const { to } = destination(identifier);
    assertStrongPassword(newPassword, [identifierText, to]);
    const checked = await withTransaction<CodeOutcome>(this.deps.knex, async (trx) => {
      const row = await onboardingRepository.findLatestResetForUpdate(trx, to);
      const check = checkCode(this.deps.codes, row, code, this.clock(), row?.user_id !== null);
      if (check.outcome === 'right' && row?.user_id) return { resetId: row.id, userId: row.user_id };
      if (check.outcome !== 'right' && check.counted && row) await onboardingRepository.countWrongResetCode(trx, row.id);
      return { error: check.outcome === 'wrong' ? new InvalidVerificationCodeError(check.attemptsLeft) : new VerificationExpiredError() };
    });
    if ('error' in checked) throw checked.error;
    const passwordHash = await this.deps.passwords.hash(newPassword);
    return withTransaction(this.deps.knex, async (trx) => {
      const row = await onboardingRepository.findResetForUpdate(trx, checked.resetId);
      // Another confirmation with the same code won the race.
      if (!row || row.completed_at) throw new VerificationExpiredError();
      await onboardingRepository.completeReset(trx, row.id);
      await new UserRepository(trx).updatePasswordHash(checked.userId, passwordHash);
      const revoked = await this.deps.sessions.revokeAll(trx, checked.userId, 'password_reset');
      await this.deps.notifier.send(trx, messages.passwordChanged(identifier));
      return { sessions_revoked: revoked };
    });
  }

  /**
   * The user changes their password, knowing the current one; every other session ends. Runs
   * in the pipeline's transaction (its Idempotency-Key commits with the change).
   */
  async change(trx: Knex.Transaction, userId: string, sessionId: string, currentPassword: string, newPassword: string): Promise<PasswordChanged> {
    const users = new UserRepository(trx);
    const credentials = await users.findCredentialsById(userId);
    const contact = await users.findContact(userId);
    if (!credentials || !contact) throw new UnauthorizedError();
    if (!(await this.deps.passwords.verify(credentials.passwordHash, currentPassword))) throw new InvalidCurrentPasswordError();
    if (newPassword === currentPassword) throw new WeakPasswordError('same_as_current');
    assertStrongPassword(newPassword, [contact.email ?? '', contact.phone ?? '']);
    await users.updatePasswordHash(userId, await this.deps.passwords.hash(newPassword));
    const revoked = await this.deps.sessions.revokeAll(trx, userId, 'password_changed', sessionId);
    const identifier: PartyIdentifier = contact.email ? { kind: 'email', email: contact.email } : { kind: 'phone', phone: contact.phone as string };
    await this.deps.notifier.send(trx, messages.passwordChanged(identifier));
    return { sessions_revoked: revoked };
  }
}
