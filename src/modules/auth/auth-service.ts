import type { Knex } from 'knex';
import { systemClock, type Clock } from '../../clock';
import type { Config } from '../../config';
import { withTransaction } from '../../db/transaction';
import { UnauthorizedError } from '../../errors';
import { AccountLockedError, InvalidCredentialsError, secondsUntil } from './auth-errors';
import { parseLoginIdentifier } from './identifier';
import type { PasswordHasher } from './password-hasher';
import { loginRefusal, type IssuedTokens, type SessionService } from './session-service';
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

/** Login with lockout, and the current user. */
export class AuthService {
  constructor(
    private readonly knex: Knex,
    private readonly passwords: PasswordHasher,
    private readonly sessions: SessionService,
    private readonly login: Config['login'],
    private readonly organizationsOf: OrganizationsOfUser,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * The password is verified outside any transaction (argon2 takes ~100 ms); the failure
   * count and the lock are updated atomically in SQL, and success re-checks the lock in the
   * same transaction that opens the session.
   */
  async logIn(identifierText: string, password: string): Promise<IssuedTokens> {
    const identifier = parseLoginIdentifier(identifierText);
    const users = new UserRepository(this.knex);
    const user = await users.findCredentials(identifier);
    if (!user) {
      await this.passwords.verifyDummy(password);
      throw new InvalidCredentialsError();
    }
    if (user.status === 'locked') throw new AccountLockedError();
    const now = this.clock();
    if (user.lockedUntil && user.lockedUntil.getTime() > now.getTime()) throw new AccountLockedError(secondsUntil(user.lockedUntil, now));

    const valid = await this.passwords.verify(user.passwordHash, password);
    if (!valid) {
      const lockedUntil = await users.recordFailedLogin(user.id, this.login.maxFailedAttempts, this.login.lockMinutes);
      if (lockedUntil) throw new AccountLockedError(secondsUntil(lockedUntil, this.clock()));
      throw new InvalidCredentialsError();
    }
    // A disabled account answers like a wrong password: it reveals nothing either way.
    if (user.status === 'disabled') throw new InvalidCredentialsError();

    const tokens = await withTransaction(this.knex, async (trx) => {
      if (!(await new UserRepository(trx).recordSuccessfulLogin(user.id))) return undefined;
      return this.sessions.open({ id: user.id, is_admin: user.isAdmin }, trx);
    });
    if (!tokens) {
      // Locked (or disabled) by a concurrent request between the check and now.
      const current = await users.findCredentialsById(user.id);
      throw (current && loginRefusal(current, this.clock())) ?? new InvalidCredentialsError();
    }
    return tokens;
  }

  async me(userId: string): Promise<Me> {
    const users = new UserRepository(this.knex);
    const [profile, organizations] = await Promise.all([users.findProfile(userId), this.organizationsOf(userId)]);
    // The authenticate middleware checked the session and its user a moment ago.
    if (!profile) throw new UnauthorizedError();
    return { id: profile.id, email: profile.email, phone: profile.phone, is_admin: profile.isAdmin, organizations };
  }
}
