-- The trigger that records what the rail must be told, in the transaction of the change of state
-- that calls for it (a top-up reversed, a refund requested, a payout processing): one row per
-- instruction (kind, subject), recorded once whatever path made the change. The job delivers it
-- (src/modules/rail-instructions); the process may die right after the commit without it being lost.
-- TG_ARGV[0] is the instruction's kind.
CREATE OR REPLACE FUNCTION rail_instruction_record()
RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO rail_instructions (kind, subject_id) VALUES (TG_ARGV[0], NEW.id)
  ON CONFLICT (kind, subject_id) DO NOTHING;
  RETURN NULL;
END;
$$;
