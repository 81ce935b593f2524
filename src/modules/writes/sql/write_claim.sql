-- The claim of an Idempotency-Key as the first step of the statement that reads what a decision
-- needs (src/modules/writes/write-path.ts): first a transaction-scoped advisory lock on the key's
-- scope, taken at once or not at all (a request holding the same key right now: `held` false,
-- nothing inserted), then the in_progress row unless the key exists (`key_id` null: a replay, a
-- reuse, or a claim to take over, which the pipeline answers from the row). Without a key
-- (`keyed` false) it claims nothing and the read goes on. The claim commits or rolls back with
-- the decision. The advisory lock's key is the one every claim of the key takes.
-- This file is what runs today: src/db/database-functions.ts applies it (CREATE OR REPLACE) and
-- test/integration/database-functions.test.ts fails when the database's function differs.
CREATE OR REPLACE FUNCTION write_claim(
  p_user_id uuid, p_organization_id uuid, p_operation text, p_key text, p_request_hash text,
  p_claim_token uuid, p_lease_seconds integer, p_ttl_hours integer,
  OUT keyed boolean, OUT held boolean, OUT key_id uuid)
LANGUAGE plpgsql AS $$
BEGIN
  keyed := p_key IS NOT NULL;
  IF NOT keyed THEN
    held := true;
    RETURN;
  END IF;
  held := pg_try_advisory_xact_lock(hashtextextended(coalesce(p_organization_id, p_user_id)::text || ' ' || p_operation || ' ' || p_key, 0));
  IF NOT held THEN
    RETURN;
  END IF;
  IF p_organization_id IS NULL THEN
    INSERT INTO idempotency_keys (user_id, organization_id, operation, key, request_hash, status, claim_token, locked_until, created_at, expires_at)
    VALUES (p_user_id, NULL, p_operation, p_key, p_request_hash, 'in_progress', p_claim_token,
            now() + make_interval(secs => p_lease_seconds), now(), now() + make_interval(hours => p_ttl_hours))
    ON CONFLICT (user_id, operation, key) DO NOTHING
    RETURNING id INTO key_id;
  ELSE
    INSERT INTO idempotency_keys (user_id, organization_id, operation, key, request_hash, status, claim_token, locked_until, created_at, expires_at)
    VALUES (NULL, p_organization_id, p_operation, p_key, p_request_hash, 'in_progress', p_claim_token,
            now() + make_interval(secs => p_lease_seconds), now(), now() + make_interval(hours => p_ttl_hours))
    ON CONFLICT (organization_id, operation, key) DO NOTHING
    RETURNING id INTO key_id;
  END IF;
END;
$$;
