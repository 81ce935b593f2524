-- The id of the ledger account a decision names by identity ({owner_type, owner_id, currency,
-- kind, external_ref}), or NULL when it does not exist yet. Found through the identity index:
-- the owner by `=` (or IS NULL for the platform's), never by IS NOT DISTINCT FROM, which no
-- index serves (it scanned every account of the owner type).
-- This file is what runs today: src/db/database-functions.ts applies it (CREATE OR REPLACE) and
-- test/integration/database-functions.test.ts fails when the database's function differs.
CREATE OR REPLACE FUNCTION write_account_id(p_account jsonb)
RETURNS uuid
LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_owner uuid := (p_account->>'owner_id')::uuid;
  v_ref text := p_account->>'external_ref';
  v_id uuid;
BEGIN
  IF v_owner IS NULL AND v_ref IS NULL THEN
    SELECT a.id INTO v_id FROM ledger_accounts a
     WHERE a.owner_type = p_account->>'owner_type' AND a.owner_id IS NULL
       AND a.currency = p_account->>'currency' AND a.kind = p_account->>'kind' AND a.external_ref IS NULL;
  ELSIF v_owner IS NULL THEN
    SELECT a.id INTO v_id FROM ledger_accounts a
     WHERE a.owner_type = p_account->>'owner_type' AND a.owner_id IS NULL
       AND a.currency = p_account->>'currency' AND a.kind = p_account->>'kind' AND a.external_ref = v_ref;
  ELSIF v_ref IS NULL THEN
    SELECT a.id INTO v_id FROM ledger_accounts a
     WHERE a.owner_type = p_account->>'owner_type' AND a.owner_id = v_owner
       AND a.currency = p_account->>'currency' AND a.kind = p_account->>'kind' AND a.external_ref IS NULL;
  ELSE
    SELECT a.id INTO v_id FROM ledger_accounts a
     WHERE a.owner_type = p_account->>'owner_type' AND a.owner_id = v_owner
       AND a.currency = p_account->>'currency' AND a.kind = p_account->>'kind' AND a.external_ref = v_ref;
  END IF;
  RETURN v_id;
END;
$$;
