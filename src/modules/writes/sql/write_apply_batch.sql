-- The decisions of a window of requests applied in one statement and one transaction (the group
-- commit of the one write path, src/modules/writes/write-batch.ts), each with its own outcome.
-- First every ledger account the items' postings name (by id, or by identity when it exists)
-- is locked in id order, the one order of ledger_post, so windows never deadlock each other nor
-- single postings. Then, item by item in its own subtransaction: the claim of its
-- Idempotency-Key (write_claim); a key it did not claim (a replay, a reuse, a key held now, one
-- to take over) is that item's outcome, `key_id` null, left to the pipeline's own rules with
-- nothing written; a claimed key goes on to the item's decision (write_apply, its completion
-- fenced by the claim just made, and so is the completion of the held payout's decision it may
-- name). An item decided as a refusal (`refused`) raises WRT05 once its
-- key is claimed: refused only when the key is the request's, so a replay is answered as a
-- replay. The item's refusals (WRT01 the ledger's, WRT02, WRT03, WRT05) roll back that item alone
-- (its claim with it) and are its outcome (`code`, `detail`); any other error fails the whole
-- statement, whose items the caller then runs again one by one.
-- p_items: a JSON array of {claim: {user_id, organization_id, operation, key, request_hash,
-- claim_token, lease_seconds, ttl_hours}, refused: boolean, decision: write_apply's decision
-- whose `key` omits its `id` (the claim's)}; one row per item (item = its 1-based position).
-- This file is what runs today: src/db/database-functions.ts applies it (CREATE OR REPLACE) and
-- test/integration/database-functions.test.ts fails when the database's function differs.
CREATE OR REPLACE FUNCTION write_apply_batch(p_items jsonb)
RETURNS TABLE (item integer, held boolean, key_id uuid, posting_ids uuid[], code text, detail text)
LANGUAGE plpgsql AS $$
DECLARE
  it record;
  posting jsonb;
  item_postings jsonb;
  entry jsonb;
  posting_entries jsonb;
  account_id uuid;
  account_ids uuid[] := '{}';
  decisions jsonb[] := '{}';
  c jsonb;
  claimed record;
  decision jsonb;
  v_code text;
  v_detail text;
BEGIN
  -- The ids first, entry by entry (by id, or by identity through write_account_id), then the
  -- rows locked by id: one query over the items' JSON joined to the accounts made a plan that
  -- read every account for each entry once PL/pgSQL cached a generic plan. An entry found by its
  -- identity goes on to write_apply by the id found, so its account is looked up once.
  FOR it IN SELECT x.n, x.v FROM jsonb_array_elements(p_items) WITH ORDINALITY AS x(v, n) ORDER BY x.n LOOP
    decision := it.v->'decision';
    IF jsonb_typeof(decision->'postings') = 'array' THEN
      item_postings := '[]';
      FOR posting IN SELECT p.x FROM jsonb_array_elements(decision->'postings') AS p(x) LOOP
        posting_entries := '[]';
        FOR entry IN SELECT e.x FROM jsonb_array_elements(posting->'entries') AS e(x) LOOP
          account_id := (entry->>'account_id')::uuid;
          IF account_id IS NULL THEN
            account_id := write_account_id(entry->'account');
            IF account_id IS NOT NULL THEN
              entry := (entry - 'account') || jsonb_build_object('account_id', account_id);
            END IF;
          END IF;
          IF account_id IS NOT NULL THEN
            account_ids := account_ids || account_id;
          END IF;
          posting_entries := posting_entries || jsonb_build_array(entry);
        END LOOP;
        item_postings := item_postings || jsonb_build_array(posting || jsonb_build_object('entries', posting_entries));
      END LOOP;
      decision := decision || jsonb_build_object('postings', item_postings);
    END IF;
    decisions := array_append(decisions, decision);
  END LOOP;
  PERFORM 1 FROM ledger_accounts a WHERE a.id = ANY (account_ids) ORDER BY a.id FOR UPDATE;

  FOR it IN SELECT x.n, x.v FROM jsonb_array_elements(p_items) WITH ORDINALITY AS x(v, n) ORDER BY x.n LOOP
    item := it.n;
    held := NULL;
    key_id := NULL;
    posting_ids := NULL;
    code := NULL;
    detail := NULL;
    BEGIN
      c := it.v->'claim';
      SELECT * INTO claimed FROM write_claim((c->>'user_id')::uuid, (c->>'organization_id')::uuid, c->>'operation', c->>'key', c->>'request_hash',
                                             (c->>'claim_token')::uuid, (c->>'lease_seconds')::integer, (c->>'ttl_hours')::integer);
      held := claimed.held;
      key_id := claimed.key_id;
      IF claimed.key_id IS NOT NULL OR NOT claimed.keyed THEN
        IF coalesce((it.v->>'refused')::boolean, false) THEN
          RAISE EXCEPTION 'the request is refused' USING ERRCODE = 'WRT05';
        END IF;
        decision := decisions[it.n::integer];
        IF claimed.key_id IS NULL THEN
          decision := decision || jsonb_build_object('key', NULL);
        ELSE
          decision := decision || jsonb_build_object('key', (decision->'key') || jsonb_build_object('id', claimed.key_id));
        END IF;
        -- A held payout's decision completes the same key (write_apply applies it in the other's place).
        IF jsonb_typeof(decision->'hold'->'instead') = 'object' THEN
          decision := jsonb_set(decision, '{hold,instead,key}',
            CASE WHEN claimed.key_id IS NULL OR jsonb_typeof(decision->'hold'->'instead'->'key') IS DISTINCT FROM 'object' THEN 'null'::jsonb
                 ELSE (decision->'hold'->'instead'->'key') || jsonb_build_object('id', claimed.key_id) END);
        END IF;
        posting_ids := write_apply(decision);
      END IF;
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS v_code = RETURNED_SQLSTATE, v_detail = PG_EXCEPTION_DETAIL;
      IF v_code NOT IN ('WRT01', 'WRT02', 'WRT03', 'WRT05') THEN
        RAISE;
      END IF;
      key_id := NULL;
      posting_ids := NULL;
      code := v_code;
      detail := nullif(v_detail, '');
    END;
    RETURN NEXT;
  END LOOP;
END;
$$;
