import type { Knex } from 'knex';

/**
 * Names are personal data, sealed at rest by the PII cipher (`<key id>:<base64url>`), like the
 * identity data of verification sessions:
 * - `users.display_name` holds a sealed value or nothing. A value that is not sealed is cleared:
 *   no code reads it and no route shows it, so nothing is lost to the person.
 * - `signup_verifications.full_name` likewise; a sign-up not yet completed whose name is not
 *   sealed is deleted (its code lives 10 minutes: the person asks for a new one).
 * A CHECK on each column refuses a plaintext name from then on.
 */
const SEALED = `'^[A-Za-z0-9_-]{1,32}:[A-Za-z0-9_-]{38,}$'`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`UPDATE users SET display_name = NULL WHERE display_name IS NOT NULL AND display_name !~ ${SEALED}`);
  await knex.raw(`DELETE FROM signup_verifications WHERE full_name IS NOT NULL AND full_name !~ ${SEALED}`);
  await knex.raw(`ALTER TABLE users ADD CONSTRAINT users_display_name_sealed CHECK (display_name IS NULL OR display_name ~ ${SEALED})`);
  await knex.raw(`ALTER TABLE signup_verifications ADD CONSTRAINT signup_verifications_full_name_sealed CHECK (full_name IS NULL OR full_name ~ ${SEALED})`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE signup_verifications DROP CONSTRAINT IF EXISTS signup_verifications_full_name_sealed');
  await knex.raw('ALTER TABLE users DROP CONSTRAINT IF EXISTS users_display_name_sealed');
}
