import type { Knex } from 'knex';
import type { LoginIdentifier, PartyIdentifier } from './identifier';

export type UserStatus = 'active' | 'locked' | 'disabled' | 'closed';

export interface UserCredentials {
  id: string;
  passwordHash: string;
  status: UserStatus;
  isAdmin: boolean;
  failedLoginCount: number;
  lockedUntil: Date | null;
}

export interface UserProfile {
  id: string;
  email: string | null;
  phone: string | null;
  isAdmin: boolean;
}

/** How a user is reached by others (a counterparty): the identifiers and whether the account is usable. */
export interface UserContact {
  id: string;
  email: string | null;
  phone: string | null;
  status: UserStatus;
}

const CONTACT_COLUMNS = ['id', 'email', 'phone', 'status'];

interface CredentialsRow {
  id: string;
  password_hash: string;
  status: UserStatus;
  is_admin: boolean;
  failed_login_count: number;
  locked_until: Date | null;
}

function toCredentials(row: CredentialsRow): UserCredentials {
  return {
    id: row.id,
    passwordHash: row.password_hash,
    status: row.status,
    isAdmin: row.is_admin,
    failedLoginCount: row.failed_login_count,
    lockedUntil: row.locked_until,
  };
}

const CREDENTIAL_COLUMNS = ['id', 'password_hash', 'status', 'is_admin', 'failed_login_count', 'locked_until'];

export class UserRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  async findCredentials(identifier: LoginIdentifier): Promise<UserCredentials | undefined> {
    const query = this.db('users').first<CredentialsRow | undefined>(CREDENTIAL_COLUMNS);
    const row = identifier.kind === 'email' ? await query.where({ email: identifier.email }) : await query.where({ phone: identifier.phone });
    return row ? toCredentials(row) : undefined;
  }

  async findCredentialsById(id: string): Promise<UserCredentials | undefined> {
    const row = await this.db('users').where({ id }).first<CredentialsRow | undefined>(CREDENTIAL_COLUMNS);
    return row ? toCredentials(row) : undefined;
  }

  /**
   * A successful login clears users.locked_until and failed_login_count: failed attempts live
   * in login_attempts, so a value left in those columns never refuses a right password.
   * Returns false when an operator locked or disabled the account in the meantime.
   */
  async recordSuccessfulLogin(id: string): Promise<boolean> {
    const count = await this.db('users')
      .where({ id, status: 'active' })
      .update({ failed_login_count: 0, locked_until: null, updated_at: this.db.fn.now() });
    return Number(count) === 1;
  }

  /**
   * A new active user (sign-up), its name sealed by the caller (`sealDisplayName`); undefined when the identifier already belongs to someone (no
   * error: the caller's transaction stays usable).
   */
  async create(input: { id: string; identifier: PartyIdentifier; passwordHash: string; displayNameSealed: string; country: string; termsAcceptedAt: Date }): Promise<{ id: string } | undefined> {
    const rows = (await this.db('users')
      .insert({
        id: input.id,
        email: input.identifier.kind === 'email' ? input.identifier.email : null,
        phone: input.identifier.kind === 'phone' ? input.identifier.phone : null,
        password_hash: input.passwordHash,
        display_name: input.displayNameSealed,
        country: input.country,
        terms_accepted_at: input.termsAcceptedAt,
      })
      .onConflict()
      .ignore()
      .returning(['id'])) as Array<{ id: string }>;
    return rows[0];
  }

  /** Sets a new password hash; false when the user does not exist. */
  async updatePasswordHash(id: string, passwordHash: string): Promise<boolean> {
    return Number(await this.db('users').where({ id }).update({ password_hash: passwordHash, updated_at: this.db.fn.now() })) === 1;
  }

  async findProfile(id: string): Promise<UserProfile | undefined> {
    const row = await this.db('users')
      .where({ id })
      .first<{ id: string; email: string | null; phone: string | null; is_admin: boolean } | undefined>('id', 'email', 'phone', 'is_admin');
    return row ? { id: row.id, email: row.email, phone: row.phone, isAdmin: row.is_admin } : undefined;
  }

  /**
   * The one look-up of a party by identifier (escrow counterparties, tontine invitees): an active
   * or locked user by e-mail (lower-cased) or E.164 telephone; disabled users are nobody.
   */
  async findReachable(identifier: PartyIdentifier): Promise<UserContact | undefined> {
    return this.db('users')
      .where(identifier.kind === 'email' ? { email: identifier.email } : { phone: identifier.phone })
      .whereNot({ status: 'disabled' })
      .first<UserContact | undefined>(CONTACT_COLUMNS);
  }

  /** A user's identifiers and status, whatever the status. */
  async findContact(id: string): Promise<UserContact | undefined> {
    return this.db('users').where({ id }).first<UserContact | undefined>(CONTACT_COLUMNS);
  }

  /** The e-mail address, or else the telephone number, of each user, by id (unknown ids are absent). */
  async findIdentifiers(ids: readonly string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const rows = (await this.db('users').whereIn('id', [...ids]).select('id', 'email', 'phone')) as Array<{ id: string; email: string | null; phone: string | null }>;
    return new Map(rows.map((row) => [row.id, row.email ?? row.phone ?? row.id]));
  }
}
