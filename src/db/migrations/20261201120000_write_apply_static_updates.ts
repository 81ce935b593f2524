import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * write_apply updates an escrow, a tontine or a contribution by id in static statements (their
 * plans kept by the session) instead of a dynamic one parsed and planned on every call: every
 * column but the id is set from the row overlaid with the decision's values, so a column the
 * decision does not set keeps its value. A decision setting a column the static statement does
 * not list, or naming its row by a key, takes the dynamic statement.
 * Down puts back the text pinned before (below).
 */
export const FUNCTIONS = {
  write_apply: '2afb29c1f17194b8',
};

export async function up(knex: Knex): Promise<void> {
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(WRITE_APPLY_BEFORE);
}

const WRITE_APPLY_BEFORE = String.raw`CREATE OR REPLACE FUNCTION write_apply(p_decision jsonb)
RETURNS uuid[]
LANGUAGE plpgsql AS $$
DECLARE
  item jsonb;
  entry jsonb;
  account jsonb;
  account_id uuid;
  accounts uuid[];
  amounts bigint[];
  posted record;
  posting_ids uuid[] := '{}';
  exponent smallint;
  target text;
  vals jsonb;
  cols text;
  field text;
  placeholder jsonb;
  row_key jsonb;
  key_cols text;
  key_names text;
  payload jsonb;
  changed bigint;
  event_id uuid;
  completion jsonb := nullif(p_decision->'key', 'null'::jsonb);
  v_holds jsonb;
  v_alternative jsonb;
  held_for uuid[] := '{}';
  -- The columns a transfer's decision sets (src/modules/transfers/transfer-decision.ts), as ${'`'}cols${'`'} spells them.
  transfer_columns CONSTANT text := 'amount_minor, created_at, currency, id, note, posting_id, rail, recipient_identifier, recipient_type, recipient_user_id, sender_user_id, status, updated_at';
BEGIN
  -- The alternatives per payee; one ${'`'}hold${'`'} object (as an instance of the previous release sends it during a deploy) is a list of one.
  v_holds := CASE WHEN jsonb_typeof(p_decision->'holds') = 'array' THEN p_decision->'holds'
                  WHEN jsonb_typeof(p_decision->'hold') = 'object' THEN jsonb_build_array(p_decision->'hold') ELSE '[]'::jsonb END;
  WHILE cardinality(posting_ids) < jsonb_array_length(coalesce(p_decision->'postings', '[]'::jsonb)) LOOP
    item := p_decision->'postings'->cardinality(posting_ids);
    accounts := '{}';
    amounts := '{}';
    FOR entry IN SELECT x FROM jsonb_array_elements(item->'entries') AS e(x) LOOP
      account_id := (entry->>'account_id')::uuid;
      IF account_id IS NULL THEN
        account := entry->'account';
        account_id := write_account_id(account);
        IF account_id IS NULL THEN
          INSERT INTO ledger_accounts (owner_type, owner_id, currency, kind, external_ref, allow_negative)
          VALUES (account->>'owner_type', (account->>'owner_id')::uuid, account->>'currency', account->>'kind', account->>'external_ref',
                  account->>'kind' = 'external_clearing')
          ON CONFLICT ON CONSTRAINT ledger_accounts_identity DO NOTHING
          RETURNING id INTO account_id;
        END IF;
        IF account_id IS NULL THEN
          -- Created by a concurrent transaction between our read and our insert (and committed).
          account_id := write_account_id(account);
        END IF;
      END IF;
      accounts := accounts || account_id;
      amounts := amounts || (entry->>'amount_minor')::bigint;
    END LOOP;
    SELECT * INTO posted FROM ledger_post(item->>'kind', item->>'reference', coalesce(item->'metadata', '{}'::jsonb), NULL,
                                          accounts, amounts, coalesce((item->>'allow_frozen')::boolean, false));
    -- A payout its payee's limits refuse: the decision names the one to apply instead for that
    -- payee (the payout held), whose postings before this one are the same (already posted).
    IF posted.refusal = 'LimitExceeded' AND posted.refusal_detail->>'direction' = 'in' THEN
      v_alternative := NULL;
      SELECT h.x INTO v_alternative FROM jsonb_array_elements(v_holds) AS h(x)
       WHERE (h.x->>'posting')::integer = cardinality(posting_ids) AND h.x->>'owner_id' = posted.refusal_detail->>'owner_id' LIMIT 1;
      IF v_alternative IS NOT NULL THEN
        p_decision := v_alternative->'instead';
        -- The alternative completes the same key: its claim (id, token) is the one the decision carries,
        -- which a window's statement (write_apply_batch) sets on the decision alone.
        completion := CASE WHEN completion IS NULL OR jsonb_typeof(p_decision->'key') IS DISTINCT FROM 'object' THEN nullif(p_decision->'key', 'null'::jsonb)
                           ELSE (p_decision->'key') || jsonb_build_object('id', completion->'id', 'claim_token', completion->'claim_token') END;
        v_holds := CASE WHEN jsonb_typeof(p_decision->'holds') = 'array' THEN p_decision->'holds' ELSE '[]'::jsonb END;
        held_for := held_for || (posted.refusal_detail->>'owner_id')::uuid;
        CONTINUE;
      END IF;
    END IF;
    IF posted.refusal IS NOT NULL THEN
      SELECT c.exponent INTO exponent FROM currencies c WHERE c.code = posted.refusal_detail->>'currency';
      RAISE EXCEPTION 'posting %/% refused: %', item->>'kind', item->>'reference', posted.refusal USING ERRCODE = 'WRT01',
        DETAIL = json_build_object('posting', cardinality(posting_ids), 'refusal', posted.refusal,
          'account_id', posted.refusal_detail->>'account_id', 'owner_id', posted.refusal_detail->>'owner_id',
          'currency', posted.refusal_detail->>'currency',
          'available', format_minor((posted.refusal_detail->>'available')::bigint, exponent),
          'required', format_minor((posted.refusal_detail->>'required')::bigint, exponent),
          'owner_type', posted.refusal_detail->>'owner_type', 'direction', posted.refusal_detail->>'direction',
          'limit', posted.refusal_detail->>'limit', 'limit_minor', posted.refusal_detail->>'limit_minor',
          'remaining_minor', posted.refusal_detail->>'remaining_minor', 'tier', posted.refusal_detail->>'tier')::text;
    END IF;
    posting_ids := posting_ids || posted.posting_id;
  END LOOP;

  FOR item IN SELECT x FROM jsonb_array_elements(coalesce(p_decision->'changes', '[]'::jsonb)) AS c(x) LOOP
    target := item->>'table';
    IF target IS NULL OR NOT target = ANY (ARRAY['escrows', 'tontines', 'tontine_cycles', 'tontine_contributions', 'tontine_members', 'transfers', 'top_ups', 'refunds', 'payouts', 'crypto_deposit_addresses', 'crypto_deposits', 'crypto_quotes', 'crypto_conversions', 'crypto_withdrawal_addresses', 'held_payouts', 'crypto_withdrawals']) THEN
      RAISE EXCEPTION 'write_apply does not write the table %', target USING ERRCODE = 'WRT09';
    END IF;
    vals := coalesce(item->'set', '{}'::jsonb);
    -- A column that takes the id of one of the decision's postings: {"funding_posting_id": 0}.
    FOR field, placeholder IN SELECT key, value FROM jsonb_each(coalesce(item->'posting_ids', '{}'::jsonb)) LOOP
      vals := vals || jsonb_build_object(field, posting_ids[(placeholder #>> '{}')::integer + 1]);
    END LOOP;
    SELECT string_agg(format('%I', k), ', ' ORDER BY k) INTO cols FROM jsonb_object_keys(vals) AS o(k);
    IF item->>'op' = 'insert' AND target = 'transfers' AND cols = transfer_columns THEN
      -- A transfer's row, the hottest insert: the same columns as the generic insert below, in a
      -- static statement whose plan PL/pgSQL keeps (the dynamic one is planned on every call).
      INSERT INTO transfers (amount_minor, created_at, currency, id, note, posting_id, rail, recipient_identifier, recipient_type, recipient_user_id, sender_user_id, status, updated_at)
      SELECT r.amount_minor, r.created_at, r.currency, r.id, r.note, r.posting_id, r.rail, r.recipient_identifier, r.recipient_type, r.recipient_user_id, r.sender_user_id, r.status, r.updated_at
        FROM jsonb_populate_record(NULL::transfers, vals) AS r;
    ELSIF item->>'op' = 'insert' THEN
      EXECUTE format('INSERT INTO %I (%s) SELECT %s FROM jsonb_populate_record(NULL::%I, $1)', target, cols, cols, target) USING vals;
    ELSE
      -- The row by its id, or by the columns of its key (a table whose rows have no id of their own).
      row_key := coalesce(item->'key', jsonb_build_object('id', item->'id'));
      SELECT string_agg(format('t.%I', k), ', ' ORDER BY k), string_agg(format('%I', k), ', ' ORDER BY k) INTO key_cols, key_names
        FROM jsonb_object_keys(row_key) AS o(k);
      EXECUTE format('UPDATE %I t SET (%s) = (SELECT %s FROM jsonb_populate_record(NULL::%I, $1)) WHERE (%s) = (SELECT %s FROM jsonb_populate_record(NULL::%I, $2)) AND to_jsonb(t) @> $3',
                     target, cols, cols, target, key_cols, key_names, target)
        USING vals, row_key, coalesce(item->'expect', '{}'::jsonb);
      GET DIAGNOSTICS changed = ROW_COUNT;
      IF changed <> 1 THEN
        RAISE EXCEPTION 'the % row % no longer shows what the decision read', target, row_key USING ERRCODE = 'WRT02';
      END IF;
    END IF;
  END LOOP;

  FOR item IN SELECT x FROM jsonb_array_elements(coalesce(p_decision->'events', '[]'::jsonb)) AS v(x) LOOP
    payload := coalesce(item->'payload', '{}'::jsonb);
    FOR field, placeholder IN SELECT key, value FROM jsonb_each(coalesce(item->'posting_ids', '{}'::jsonb)) LOOP
      payload := payload || jsonb_build_object(field, posting_ids[(placeholder #>> '{}')::integer + 1]);
    END LOOP;
    WITH seq AS (
      INSERT INTO event_sequences (object_type, object_id, last) VALUES (item->>'subject_type', (item->>'subject_id')::uuid, 1)
      ON CONFLICT (object_type, object_id) DO UPDATE SET last = event_sequences.last + 1
      RETURNING last)
    INSERT INTO events (subject_type, subject_id, type, actor_user_id, payload, occurred_at, organization_id, object_sequence, data)
    SELECT item->>'subject_type', (item->>'subject_id')::uuid, item->>'type', (item->>'actor_user_id')::uuid,
           payload, (item->>'occurred_at')::timestamptz, (item->>'organization_id')::uuid, seq.last,
           jsonb_build_object('object', item->'object', 'previous_status', item->'previous_status')
      FROM seq
    RETURNING id INTO event_id;
    IF item->>'organization_id' IS NOT NULL THEN
      INSERT INTO webhook_deliveries (endpoint_id, event_id, organization_id, next_attempt_at)
      SELECT w.id, event_id, w.organization_id, (item->>'occurred_at')::timestamptz FROM webhook_endpoints w
       WHERE w.organization_id = (item->>'organization_id')::uuid AND w.status = 'enabled'
         AND w.events && ARRAY(SELECT jsonb_array_elements_text(item->'patterns'))
         AND (w.object_types IS NULL OR (item->>'subject_type') = ANY (w.object_types));
    END IF;
  END LOOP;

  IF completion IS NOT NULL THEN
    UPDATE idempotency_keys SET status = 'completed', response_status = (completion->>'response_status')::integer, response_body = NULL,
           resource_type = completion->>'resource_type', resource_id = (completion->>'resource_id')::uuid,
           resource_status = completion->>'resource_status', resource_location = completion->>'resource_location', completed_at = now()
     WHERE id = (completion->>'id')::uuid AND claim_token = (completion->>'claim_token')::uuid AND status = 'in_progress';
    IF NOT FOUND THEN
      RAISE EXCEPTION 'the Idempotency-Key was taken over' USING ERRCODE = 'WRT03';
    END IF;
  END IF;
  IF cardinality(held_for) > 0 THEN
    RETURN array_append(posting_ids, NULL::uuid) || held_for;
  END IF;
  RETURN posting_ids;
END;
$$;
`;
