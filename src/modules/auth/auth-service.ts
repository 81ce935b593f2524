import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { systemClock, type Clock } from '../../clock';
import type { Config } from '../../config';
import { withTransaction } from '../../db/transaction';
import { UnauthorizedError } from '../../errors';
import { AccountLockedError, InvalidCredentialsError, secondsUntil } from './auth-errors';
import { parseLoginIdentifier, type LoginIdentifier } from './identifier';
import { EVERY_SOURCE, LoginAttemptsRepository, type Reservation } from './login-attempts-repository';
import { VerificationBudget, type PasswordHasher } from './password-hasher';
import type { SessionClient } from './session-repository';
import { statusRefusal, type IssuedTokens, type SessionService } from './session-service';
import { UserRepository } from './user-repository';

/** An organisation where the user is an active member (the organizations module owns memberships). */
export interface UserOrganization {
  id: string;
  name: string;
  status: 'active' | 'inactive' | 'suspended';
  role: 'owner' | 'admin' | 'representative' | 'director' | 'finance_manager' | 'cashier';
}

/** How the auth module learns a user's organisations without reading the organizations module's tables (services.ts wires it). */
export type OrganizationsOfUser = (userId: string) => Promise<UserOrganization[]>;

export interface Me {
  id: string;
  email: string | null;
  phone: string | null;
  is_admin: boolean;
  organizations: UserOrganization[];
}

/**
 * Login with its lockout policy, and the current user.
 *
 * - Failed attempts are counted per account and source address: LOGIN_MAX_FAILED_ATTEMPTS
 *   failures from one source within LOGIN_LOCK_MINUTES lock that source out of that account
 *   for LOGIN_LOCK_MINUTES; other sources are not affected.
 * - LOGIN_ACCOUNT_MAX_FAILED_ATTEMPTS failures from all sources lock the account for every
 *   source except those that logged in to it successfully in the last LOGIN_KNOWN_SOURCE_DAYS
 *   (the owner's usual addresses keep their own budget, so strangers cannot lock them out).
 * - Each attempt is counted in the database before its password is verified (one upsert), so
 *   concurrent attempts on any number of instances never verify more passwords than allowed.
 * - An identifier nobody has is counted, locked and answered exactly like an account (a
 *   dummy verification takes the same time): the answers never tell who has an account.
 */
export class AuthService {
  private readonly budget: VerificationBudget;

  constructor(
    private readonly knex: Knex,
    private readonly passwords: PasswordHasher,
    private readonly sessions: SessionService,
    private readonly login: Config['login'],
    private readonly organizationsOf: OrganizationsOfUser,
    private readonly clock: Clock = systemClock,
  ) {
    this.budget = new VerificationBudget(login.maxConcurrentVerifications);
  }

  /** Password verifications running now in this process. */
  get verificationsInUse(): number {
    return this.budget.inUse;
  }

  /**
   * `source` is the client address as the rate limiters see it. The password is verified
   * outside any transaction (argon2 takes ~64 ms); success re-checks the account's status in
   * the transaction that opens the session.
   */
  async logIn(identifierText: string, password: string, source: string, userAgent?: string): Promise<IssuedTokens> {
    const identifier = parseLoginIdentifier(identifierText);
    // A slot before anything is counted: a 503 costs the caller no attempt.
    const release = this.budget.admit();
    try {
      return await this.attempt(identifier, password, { ip: source, userAgent });
    } finally {
      release();
    }
  }

  private async attempt(identifier: LoginIdentifier, password: string, client: SessionClient): Promise<IssuedTokens> {
    const source = client.ip;
    const users = new UserRepository(this.knex);
    const attempts = new LoginAttemptsRepository(this.knex);
    const user = await users.findCredentials(identifier);
    const subject = user ? `u:${user.id}` : `i:${crypto.createHash('sha256').update(identifier.kind === 'email' ? identifier.email : identifier.phone).digest('hex')}`;
    const { maxFailedAttempts, accountMaxFailedAttempts, lockMinutes, knownSourceDays } = this.login;

    const fromSource = await attempts.reserve(subject, source, lockMinutes);
    const refusedForSource = this.refusal(fromSource, maxFailedAttempts);
    if (refusedForSource) throw refusedForSource;
    const now = this.clock();
    const known = fromSource.lastSuccessAt !== null && fromSource.lastSuccessAt.getTime() > now.getTime() - knownSourceDays * 86_400_000;
    const fromAll = await attempts.reserve(subject, EVERY_SOURCE, lockMinutes);
    const refusedForAccount = known ? undefined : this.refusal(fromAll, accountMaxFailedAttempts);
    if (refusedForAccount) throw refusedForAccount;

    const valid = user ? await this.passwords.verify(user.passwordHash, password) : (await this.passwords.verifyDummy(password), false);
    if (!user || !valid) {
      // The attempt that reaches a limit sets its lock and says so.
      let lockedUntil: Date | undefined;
      if (fromSource.failures === maxFailedAttempts) lockedUntil = await attempts.lock(subject, source, lockMinutes);
      if (fromAll.failures === accountMaxFailedAttempts) {
        const accountLock = await attempts.lock(subject, EVERY_SOURCE, lockMinutes);
        if (!known) lockedUntil = accountLock;
      }
      if (lockedUntil) throw new AccountLockedError(secondsUntil(lockedUntil, this.clock()));
      throw new InvalidCredentialsError();
    }
    // Only the right password learns of an operator's decision: a wrong one is answered like
    // any other, so the status of an account is no oracle either.
    const refusal = statusRefusal(user);
    if (refusal) throw refusal;

    const tokens = await withTransaction(this.knex, async (trx) => {
      if (!(await new UserRepository(trx).recordSuccessfulLogin(user.id))) return undefined;
      return this.sessions.open(trx, { id: user.id, is_admin: user.isAdmin }, { client });
    });
    if (!tokens) {
      // Locked or disabled by an operator between the check and now.
      const current = await users.findCredentialsById(user.id);
      throw (current && statusRefusal(current)) ?? new InvalidCredentialsError();
    }
    await Promise.all([attempts.recordSuccess(subject, source), attempts.release(subject, EVERY_SOURCE)]);
    return tokens;
  }

  /** Deletes failed-login rows untouched for longer than a known source is remembered; returns how many. */
  purgeLoginAttempts(): Promise<number> {
    return new LoginAttemptsRepository(this.knex).purgeOlderThan(this.login.knownSourceDays + 1);
  }

  /** AccountLocked when this reservation finds a running lock or a count past `max`. */
  private refusal(reservation: Reservation, max: number): AccountLockedError | undefined {
    const now = this.clock();
    if (reservation.lockedUntil && reservation.lockedUntil.getTime() > now.getTime()) return new AccountLockedError(secondsUntil(reservation.lockedUntil, now));
    if (reservation.failures > max) {
      // The attempt that reached the limit is still being checked: its lock is about to start.
      return new AccountLockedError(Math.max(1, this.login.lockMinutes * 60));
    }
    return undefined;
  }

  async me(userId: string): Promise<Me> {
    const users = new UserRepository(this.knex);
    const [profile, organizations] = await Promise.all([users.findProfile(userId), this.organizationsOf(userId)]);
    // The authenticate middleware checked the session and its user a moment ago.
    if (!profile) throw new UnauthorizedError();
    return { id: profile.id, email: profile.email, phone: profile.phone, is_admin: profile.isAdmin, organizations };
  }
}
