-- The first event of an object created in the same transaction (a transfer's row insert):
-- sequence 1, and no event_sequences row. The counter row is written by the object's second
-- event (record_event, EventRepository.record: a missing counter starts after the object's
-- highest sequence), so an object with one event costs one row, not two (issue 21: the
-- counter upsert was a third of the event's cost, the event a fifth of a transfer's).
-- Only for an object no other transaction can see yet: a second "first" event of one object
-- would take sequence 1 again and be refused by events_object_sequence.
-- This file is what runs today: src/db/database-functions.ts applies it (CREATE OR REPLACE) and
-- test/integration/database-functions.test.ts fails when the database's function differs.
CREATE OR REPLACE FUNCTION record_first_event(p_type text, p_subject_type text, p_subject_id uuid, p_actor uuid, p_organization uuid, p_object jsonb)
  RETURNS void LANGUAGE sql AS $$
  INSERT INTO events (subject_type, subject_id, type, actor_user_id, payload, occurred_at, organization_id, object_sequence, data)
  VALUES (p_subject_type, p_subject_id, p_type, p_actor, '{}', now(), p_organization, 1,
    jsonb_build_object('object', p_object, 'previous_status', NULL))
$$;
