CREATE OR REPLACE FUNCTION events_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF current_setting('app.purge_events', true) = 'on' THEN RETURN OLD; END IF;
    RAISE EXCEPTION 'events are append-only (only the retention purge deletes them)' USING ERRCODE = '23001';
  END IF;
  IF OLD.data IS NULL AND NEW.data IS NOT NULL
     AND (NEW.sequence, NEW.id, NEW.subject_type, NEW.subject_id, NEW.type, NEW.actor_user_id, NEW.payload, NEW.occurred_at, NEW.organization_id, NEW.object_sequence)
         IS NOT DISTINCT FROM (OLD.sequence, OLD.id, OLD.subject_type, OLD.subject_id, OLD.type, OLD.actor_user_id, OLD.payload, OLD.occurred_at, OLD.organization_id, OLD.object_sequence) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'events are append-only' USING ERRCODE = '23001';
END $$;
