-- Group commit for POST /transfers: the transfers that one instance collected within its window
-- (at most 64), in one call and one transaction. Each item is one transfer_create, with its own
-- idempotency key, its own checks and its own outcome: a refusal (SQLSTATE TRFxx) rolls back that
-- item alone (its own subtransaction) and is returned as (code, detail), never failing another
-- item. Every account the batch will touch is locked first, in id order (the one global order of
-- ledger_post), so batches never deadlock each other nor single postings. Any other error (a
-- deadlock, a lost connection, a constraint) fails the whole batch: the caller then retries the
-- items one by one, each in its own transaction (this function with one item).
-- p_items: a JSON array of {session_id, user_id, operation, key, request_hash, lease_seconds,
-- ttl_hours, currency, amount (a string of minor units), note, identifier_kind, identifier, rail,
-- phone_valid, attempt (a uuid naming the request across its runs: see transfer_create)}; the result has one row per item (item = its 1-based position).
-- This file is what runs today: src/db/database-functions.ts applies it (CREATE OR REPLACE) and
-- test/integration/database-functions.test.ts fails when the database's function differs.
CREATE OR REPLACE FUNCTION transfer_create_batch(p_items jsonb)
RETURNS TABLE (item integer, code text, detail text, transfer transfers)
LANGUAGE plpgsql AS $$
DECLARE
  it record;
  v_code text;
  v_detail text;
BEGIN
  -- Every wallet and transit account the items can touch, locked once in id order. An account
  -- created by an item (a recipient's first wallet) is new and seen by no one else before commit.
  PERFORM 1 FROM ledger_accounts a
   WHERE a.id IN (
     SELECT w.id FROM jsonb_to_recordset(p_items) AS i(user_id uuid, currency text)
       JOIN ledger_accounts w ON w.owner_type = 'user' AND w.owner_id = i.user_id AND w.currency = i.currency AND w.kind = 'wallet' AND w.external_ref IS NULL
     UNION ALL
     SELECT w.id FROM jsonb_to_recordset(p_items) AS i(currency text, identifier_kind text, identifier text, rail text)
       JOIN users u ON (i.identifier_kind = 'email' AND u.email = i.identifier)
       JOIN ledger_accounts w ON w.owner_type = 'user' AND w.owner_id = u.id AND w.currency = i.currency AND w.kind = 'wallet' AND w.external_ref IS NULL
     UNION ALL
     SELECT w.id FROM jsonb_to_recordset(p_items) AS i(currency text, identifier_kind text, identifier text, rail text)
       JOIN users u ON (i.identifier_kind = 'phone' AND i.rail IS DISTINCT FROM 'mobile_money' AND u.phone = i.identifier)
       JOIN ledger_accounts w ON w.owner_type = 'user' AND w.owner_id = u.id AND w.currency = i.currency AND w.kind = 'wallet' AND w.external_ref IS NULL
     UNION ALL
     SELECT w.id FROM jsonb_to_recordset(p_items) AS i(currency text, identifier_kind text)
       JOIN ledger_accounts w ON w.owner_type = 'platform' AND w.owner_id IS NULL AND w.currency = i.currency AND w.kind = 'rail_transit'
        AND w.external_ref = CASE i.identifier_kind WHEN 'iban' THEN 'bank' ELSE 'mobile_money' END
      WHERE i.identifier_kind IN ('iban', 'phone'))
   ORDER BY a.id
     FOR UPDATE;

  FOR it IN
    SELECT x.n, x.v FROM jsonb_array_elements(p_items) WITH ORDINALITY AS x(v, n) ORDER BY x.n
  LOOP
    item := it.n;
    code := NULL;
    detail := NULL;
    transfer := NULL;
    BEGIN
      SELECT * INTO transfer FROM transfer_create(
        (it.v->>'session_id')::uuid, (it.v->>'user_id')::uuid, it.v->>'operation', it.v->>'key', it.v->>'request_hash',
        (it.v->>'lease_seconds')::integer, (it.v->>'ttl_hours')::integer,
        it.v->>'currency', (it.v->>'amount')::bigint, it.v->>'note',
        it.v->>'identifier_kind', it.v->>'identifier', it.v->>'rail', (it.v->>'phone_valid')::boolean, (it.v->>'attempt')::uuid);
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS v_code = RETURNED_SQLSTATE, v_detail = PG_EXCEPTION_DETAIL;
      -- Only the item's own refusals are outcomes; anything else fails the batch.
      IF v_code NOT LIKE 'TRF__' THEN
        RAISE;
      END IF;
      code := v_code;
      detail := nullif(v_detail, '');
      transfer := NULL;
    END;
    RETURN NEXT;
  END LOOP;
END;
$$;
