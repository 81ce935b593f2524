CREATE OR REPLACE FUNCTION transfers_record_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_exponent integer;
  v_recipient jsonb;
  v_object jsonb;
  v_type text;
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.status IS NOT DISTINCT FROM OLD.status THEN RETURN NULL; END IF;
  v_type := CASE NEW.status WHEN 'pending' THEN 'transfer.created' WHEN 'completed' THEN 'transfer.completed' WHEN 'failed' THEN 'transfer.failed' ELSE NULL END;
  IF v_type IS NULL THEN RETURN NULL; END IF;
  SELECT exponent INTO v_exponent FROM currencies WHERE code = NEW.currency;
  v_recipient := jsonb_build_object('identifier', NEW.recipient_identifier, 'type', NEW.recipient_type);
  IF NEW.recipient_user_id IS NOT NULL THEN v_recipient := v_recipient || jsonb_build_object('user_id', NEW.recipient_user_id); END IF;
  v_object := jsonb_build_object(
    'id', NEW.id, 'status', NEW.status, 'rail', NEW.rail,
    'amount', round(NEW.amount_minor::numeric / (10::numeric ^ v_exponent), v_exponent),
    'amount_minor', NEW.amount_minor::text, 'currency', NEW.currency, 'recipient', v_recipient, 'note', NEW.note,
    'failure_code', NEW.failure_code, 'failure_reason', NEW.failure_reason,
    'created_at', to_char(NEW.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'updated_at', to_char(NEW.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
  PERFORM record_event(v_type, 'transfer', NEW.id, CASE WHEN TG_OP = 'INSERT' THEN NEW.sender_user_id END, NULL, v_object,
    CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END);
  RETURN NULL;
END $$;
