-- One event with its per-object sequence (the transfers' trigger records theirs through it, on
-- every transfer's insert). PL/pgSQL, so the session keeps the statement's plan: a LANGUAGE sql
-- function that writes is planned again on every call.
CREATE OR REPLACE FUNCTION record_event(p_type text, p_subject_type text, p_subject_id uuid, p_actor uuid, p_organization uuid, p_object jsonb, p_previous_status text)
  RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  WITH seq AS (
    INSERT INTO event_sequences (object_type, object_id, last) VALUES (p_subject_type, p_subject_id, 1)
    ON CONFLICT (object_type, object_id) DO UPDATE SET last = event_sequences.last + 1
    RETURNING last)
  INSERT INTO events (subject_type, subject_id, type, actor_user_id, payload, occurred_at, organization_id, object_sequence, data)
  SELECT p_subject_type, p_subject_id, p_type, p_actor, '{}', now(), p_organization, seq.last,
    jsonb_build_object('object', p_object, 'previous_status', p_previous_status)
  FROM seq;
END;
$$;
