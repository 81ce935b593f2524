import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * write_apply_batch completes the Idempotency-Key of a held payout's decision too: the decision
 * write_apply applies in the other's place when the beneficiary's limits refuse a pot (a
 * tontine's cycle completed in a window, an escrow released in one) names the same key, whose
 * claim the window has just made. Down puts back the text pinned before (below).
 */
export const FUNCTIONS = {
  write_apply_batch: '9686f43c24e12c44',
};

export async function up(knex: Knex): Promise<void> {
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(WRITE_APPLY_BATCH_BEFORE);
}

const WRITE_APPLY_BATCH_BEFORE = String.raw`
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
`;
