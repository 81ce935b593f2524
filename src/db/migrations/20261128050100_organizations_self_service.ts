import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * Organisations run by their members: the organisation's legal profile and its business
 * verification (KYB), invitations of colleagues, and API keys that do not outlive the trust
 * placed in whoever holds them.
 *
 * - organizations: legal_name, trading_name, country, registration_number, legal_form,
 *   default_currency, support contacts and the verification (status unverified -> pending ->
 *   verified | rejected, its representative, document, decision and reason). Rows created
 *   before keep `name` as their legal name.
 * - organization_invitations: an invitation of an identifier (e-mail or E.164) to a role,
 *   pending until accepted, declined or revoked, expired after its `expires_at`.
 * - api_keys: `held_by` (null: its creator) is whom a key answers for, changed by a transfer;
 *   `revoked_reason` says why a key was revoked. A trigger on users and memberships revokes,
 *   in the same transaction, the keys of a holder who may no longer create keys in the
 *   organisation (api_keys_creator_lost_access), with their `api_key.revoked` events.
 * - events: organisations, their members and invitations are event subjects.
 */
export const FUNCTIONS = {
  api_keys_revoke_for_lost_access: 'e700e809dd483436',
  api_keys_creator_lost_access: 'abd05b3640c1a3c2',
};

const NEW_SUBJECT_TYPES = ['organization', 'organization_member', 'organization_invitation'];

/** The subject types the events check allows today (whatever migrations ran before this one), with `extra`. */
async function widenEventSubjects(knex: Knex, extra: readonly string[]): Promise<void> {
  const result = await knex.raw(`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'events_subject_type' AND conrelid = 'events'::regclass`);
  const def = ((result as { rows: Array<{ def: string }> }).rows[0]?.def ?? '') as string;
  const current = [...def.matchAll(/'([a-z_]+)'/g)].map((m) => m[1] as string);
  const all = [...new Set([...current, ...extra])];
  await knex.raw(`ALTER TABLE events DROP CONSTRAINT IF EXISTS events_subject_type`);
  await knex.raw(`ALTER TABLE events ADD CONSTRAINT events_subject_type CHECK (subject_type IN (${all.map((t) => `'${t}'`).join(', ')}))`);
}

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE organizations
    ADD COLUMN legal_name text,
    ADD COLUMN trading_name text,
    ADD COLUMN country char(2),
    ADD COLUMN registration_number text,
    ADD COLUMN legal_form text,
    ADD COLUMN default_currency char(3) REFERENCES currencies(code),
    ADD COLUMN support_email text,
    ADD COLUMN support_phone text,
    ADD COLUMN created_by uuid REFERENCES users(id),
    ADD COLUMN verification_status text NOT NULL DEFAULT 'unverified',
    ADD COLUMN verification_submitted_at timestamptz,
    ADD COLUMN verification_decided_at timestamptz,
    ADD COLUMN verification_decided_by uuid REFERENCES users(id),
    ADD COLUMN verification_rejection_reason text,
    ADD COLUMN verification_rejected_requirement text,
    ADD COLUMN verification_representative_user_id uuid REFERENCES users(id),
    ADD COLUMN verification_document_id uuid,
    ADD CONSTRAINT organizations_legal_name CHECK (legal_name IS NULL OR length(legal_name) BETWEEN 1 AND 200),
    ADD CONSTRAINT organizations_trading_name CHECK (trading_name IS NULL OR length(trading_name) BETWEEN 1 AND 200),
    ADD CONSTRAINT organizations_country CHECK (country IS NULL OR country ~ '^[A-Z]{2}$'),
    ADD CONSTRAINT organizations_registration_number CHECK (registration_number IS NULL OR length(registration_number) BETWEEN 1 AND 64),
    ADD CONSTRAINT organizations_legal_form CHECK (legal_form IS NULL OR legal_form IN ('sole_proprietorship', 'company', 'association')),
    ADD CONSTRAINT organizations_verification_rejected_requirement CHECK (verification_rejected_requirement IS NULL OR verification_rejected_requirement IN ('registration_document', 'representative')),
    ADD CONSTRAINT organizations_verification_status CHECK (verification_status IN ('unverified', 'pending', 'verified', 'rejected')),
    ADD CONSTRAINT organizations_verification_decided CHECK ((verification_decided_at IS NOT NULL) = (verification_status IN ('verified', 'rejected')))`);
  await knex.raw(`UPDATE organizations SET legal_name = name WHERE legal_name IS NULL`);

  await knex.raw(`CREATE TABLE organization_invitations (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
      identifier text NOT NULL,
      role text NOT NULL,
      status text NOT NULL DEFAULT 'pending',
      invited_by uuid NOT NULL REFERENCES users(id),
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      responded_at timestamptz,
      responded_by uuid REFERENCES users(id),
      CONSTRAINT organization_invitations_role CHECK (role IN ('owner', 'admin', 'representative', 'director', 'finance_manager', 'cashier')),
      CONSTRAINT organization_invitations_status CHECK (status IN ('pending', 'accepted', 'declined', 'revoked')),
      CONSTRAINT organization_invitations_identifier CHECK (identifier = lower(identifier) AND length(identifier) BETWEEN 3 AND 254),
      CONSTRAINT organization_invitations_expiry CHECK (expires_at > created_at),
      CONSTRAINT organization_invitations_response CHECK ((responded_at IS NULL) = (status = 'pending')));
    CREATE INDEX organization_invitations_organization_index ON organization_invitations (organization_id, created_at, id);
    CREATE INDEX organization_invitations_identifier_index ON organization_invitations (identifier) WHERE status = 'pending';
    CREATE UNIQUE INDEX organization_invitations_one_pending ON organization_invitations (organization_id, identifier) WHERE status = 'pending'`);

  await knex.raw(`ALTER TABLE api_keys
    ADD COLUMN held_by uuid REFERENCES users(id),
    ADD COLUMN revoked_reason text,
    DROP CONSTRAINT api_keys_revocation_complete,
    DROP CONSTRAINT api_keys_scopes_present,
    ADD CONSTRAINT api_keys_scopes_present CHECK (cardinality(scopes) BETWEEN 1 AND 15),
    ADD CONSTRAINT api_keys_revoked_reason CHECK (revoked_reason IS NULL OR revoked_reason IN ('revoked', 'creator_lost_access')),
    ADD CONSTRAINT api_keys_revocation_complete CHECK (
      (revoked_at IS NULL AND revoked_by IS NULL AND revoked_reason IS NULL)
      OR (revoked_at IS NOT NULL AND (revoked_by IS NOT NULL OR revoked_reason = 'creator_lost_access')));
    UPDATE api_keys SET revoked_reason = 'revoked' WHERE revoked_at IS NOT NULL;
    CREATE INDEX api_keys_holder_index ON api_keys ((coalesce(held_by, created_by))) WHERE revoked_at IS NULL`);

  await widenEventSubjects(knex, NEW_SUBJECT_TYPES);

  await applyDatabaseFunctions(knex, FUNCTIONS);
  await createLostAccessTriggers(knex);
}

/**
 * The triggers that revoke a holder's keys with their loss of access, once their function
 * exists (a fresh database gets the function from the newest migration that pins its text,
 * which creates them then).
 */
export async function createLostAccessTriggers(knex: Knex): Promise<void> {
  await knex.raw(`DO $$ BEGIN
    IF to_regprocedure('api_keys_creator_lost_access()') IS NOT NULL THEN
      DROP TRIGGER IF EXISTS users_api_keys_creator_lost_access ON users;
      CREATE TRIGGER users_api_keys_creator_lost_access AFTER UPDATE OF status ON users
        FOR EACH ROW EXECUTE FUNCTION api_keys_creator_lost_access();
      DROP TRIGGER IF EXISTS memberships_api_keys_creator_lost_access ON memberships;
      CREATE TRIGGER memberships_api_keys_creator_lost_access AFTER UPDATE OR DELETE ON memberships
        FOR EACH ROW EXECUTE FUNCTION api_keys_creator_lost_access();
    END IF;
  END $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP TRIGGER IF EXISTS users_api_keys_creator_lost_access ON users;
    DROP TRIGGER IF EXISTS memberships_api_keys_creator_lost_access ON memberships;
    DROP FUNCTION IF EXISTS api_keys_creator_lost_access();
    DROP FUNCTION IF EXISTS api_keys_revoke_for_lost_access(uuid, uuid);
    DROP TABLE IF EXISTS organization_invitations`);
  await knex.raw(`ALTER TABLE api_keys DROP CONSTRAINT api_keys_revocation_complete, DROP CONSTRAINT api_keys_revoked_reason,
    DROP CONSTRAINT api_keys_scopes_present;
    UPDATE api_keys SET revoked_by = created_by WHERE revoked_at IS NOT NULL AND revoked_by IS NULL;
    ALTER TABLE api_keys DROP COLUMN held_by, DROP COLUMN revoked_reason,
      ADD CONSTRAINT api_keys_scopes_present CHECK (cardinality(scopes) BETWEEN 1 AND 14),
      ADD CONSTRAINT api_keys_revocation_complete CHECK ((revoked_at IS NULL) = (revoked_by IS NULL))`);
  await knex.raw(`ALTER TABLE organizations
    DROP COLUMN legal_name, DROP COLUMN trading_name, DROP COLUMN country, DROP COLUMN registration_number, DROP COLUMN legal_form,
    DROP COLUMN default_currency, DROP COLUMN support_email, DROP COLUMN support_phone, DROP COLUMN created_by,
    DROP COLUMN verification_status, DROP COLUMN verification_submitted_at, DROP COLUMN verification_decided_at,
    DROP COLUMN verification_decided_by, DROP COLUMN verification_rejection_reason, DROP COLUMN verification_rejected_requirement,
    DROP COLUMN verification_representative_user_id, DROP COLUMN verification_document_id`);
}
