import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * record_event in PL/pgSQL: the session keeps its statement's plan (as LANGUAGE sql, a function
 * that writes is planned on every call, and every transfer's insert records its event through
 * it). Same statement, same event. Down puts back the LANGUAGE sql text (below).
 */
export const FUNCTIONS = {
  record_event: 'd392a74f7c0d324b',
};

export async function up(knex: Knex): Promise<void> {
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(RECORD_EVENT_BEFORE);
}

const RECORD_EVENT_BEFORE = String.raw`CREATE OR REPLACE FUNCTION record_event(p_type text, p_subject_type text, p_subject_id uuid, p_actor uuid, p_organization uuid, p_object jsonb, p_previous_status text)
  RETURNS void LANGUAGE sql AS $$
  WITH seq AS (
    INSERT INTO event_sequences (object_type, object_id, last) VALUES (p_subject_type, p_subject_id, 1)
    ON CONFLICT (object_type, object_id) DO UPDATE SET last = event_sequences.last + 1
    RETURNING last)
  INSERT INTO events (subject_type, subject_id, type, actor_user_id, payload, occurred_at, organization_id, object_sequence, data)
  SELECT p_subject_type, p_subject_id, p_type, p_actor, '{}', now(), p_organization, seq.last,
    jsonb_build_object('object', p_object, 'previous_status', p_previous_status)
  FROM seq
$$;
`;
