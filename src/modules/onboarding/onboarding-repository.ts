import type { Knex } from 'knex';
import type { NotificationChannel } from '../notifications';
import type { CodeRow } from './one-time-code';

export interface SignupVerificationRow extends CodeRow {
  identifier: string;
  channel: NotificationChannel;
  existing_account: boolean;
  password_hash: string | null;
  full_name: string | null;
  country: string | null;
  created_at: Date;
}

export interface PasswordResetRow extends CodeRow {
  identifier: string;
  user_id: string | null;
}

type Db = Knex | Knex.Transaction;

/** The rows of sign-up verifications and password resets (their codes only as hashes). */
export const onboardingRepository = {
  async insertSignup(trx: Knex.Transaction, row: Omit<SignupVerificationRow, 'attempts' | 'completed_at' | 'created_at'>): Promise<void> {
    await trx('signup_verifications').insert(row);
  },

  /** The verification, locked until the end of the transaction (two tries of one code are serialised). */
  async findSignupForUpdate(trx: Knex.Transaction, id: string): Promise<SignupVerificationRow | undefined> {
    return trx('signup_verifications').where({ id }).forUpdate().first<SignupVerificationRow | undefined>('*');
  },

  async completeSignup(trx: Knex.Transaction, id: string, userId: string | null): Promise<void> {
    // The password hash and the name are not kept once they are the user's (or never will be).
    await trx('signup_verifications').where({ id }).update({ completed_at: trx.fn.now(), user_id: userId, password_hash: null, full_name: null });
  },

  async countWrongSignupCode(trx: Knex.Transaction, id: string): Promise<void> {
    await trx('signup_verifications').where({ id }).increment('attempts', 1);
  },

  async insertReset(trx: Knex.Transaction, row: Omit<PasswordResetRow, 'attempts' | 'completed_at'> & { channel: NotificationChannel }): Promise<void> {
    await trx('password_resets').insert(row);
  },

  /** The newest reset of an identifier, locked: only the last code asked for counts. */
  async findLatestResetForUpdate(trx: Knex.Transaction, identifier: string): Promise<PasswordResetRow | undefined> {
    return trx('password_resets').where({ identifier }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).forUpdate().first<PasswordResetRow | undefined>('*');
  },

  async findResetForUpdate(trx: Knex.Transaction, id: string): Promise<PasswordResetRow | undefined> {
    return trx('password_resets').where({ id }).forUpdate().first<PasswordResetRow | undefined>('*');
  },

  async countWrongResetCode(trx: Knex.Transaction, id: string): Promise<void> {
    await trx('password_resets').where({ id }).increment('attempts', 1);
  },

  async completeReset(trx: Knex.Transaction, id: string): Promise<void> {
    await trx('password_resets').where({ id }).update({ completed_at: trx.fn.now() });
  },

  /** Deletes verifications and resets created more than `hours` ago (long expired); returns how many. */
  async purgeOlderThan(db: Db, hours: number): Promise<number> {
    const cutoff = db.raw(`now() - make_interval(hours => ?)`, [hours]);
    const [signups, resets] = await Promise.all([db('signup_verifications').where('created_at', '<', cutoff).del(), db('password_resets').where('created_at', '<', cutoff).del()]);
    return Number(signups) + Number(resets);
  },
};
