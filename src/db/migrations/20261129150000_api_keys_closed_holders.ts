import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';
import { createLostAccessTriggers } from './20261128050100_organizations_self_service';

/**
 * A closed account holds no key, as a disabled one holds none: the trigger revokes the keys of a
 * holder whose account is closed, and the revocation counts a closed holder as one who may no
 * longer create keys. Keys whose holder had already lost access when the rule arrived (no
 * trigger saw it happen) are revoked once here, each with its `api_key.revoked` event
 * (reason creator_lost_access).
 */
export const FUNCTIONS = {
  api_keys_revoke_for_lost_access: '80ce3efda49a98fb',
  api_keys_creator_lost_access: '4d9a34371758c1c9',
};

/** Revokes every active key whose holder may no longer create keys in its organisation (idempotent). */
export async function revokeKeysOfHoldersWithoutAccess(knex: Knex): Promise<void> {
  await knex.raw(`SELECT api_keys_revoke_for_lost_access(holder, organization_id)
    FROM (SELECT DISTINCT coalesce(held_by, created_by) AS holder, organization_id FROM api_keys WHERE revoked_at IS NULL) k
    ORDER BY holder, organization_id`);
}

export async function up(knex: Knex): Promise<void> {
  await applyDatabaseFunctions(knex, FUNCTIONS);
  await createLostAccessTriggers(knex);
  await revokeKeysOfHoldersWithoutAccess(knex);
}

export async function down(): Promise<void> {
  // Nothing to undo: the functions keep this text (a closed holder keeping keys is never wanted), revocations stay.
}
