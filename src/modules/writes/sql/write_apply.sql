-- A decision applied in one statement (src/modules/writes/write-path.ts decides, in TypeScript,
-- from what one locked read returned): its postings, each through ledger_post (which locks the
-- accounts in id order and checks balances, frozen accounts and the sums); the rows it inserts
-- or updates (a row named by its id, or by the columns of its `key`), an update only while the
-- row still shows what the decision read (`expect`); its events, each with its per-object
-- sequence and, for an organisation's object, its webhook deliveries; and the completion of the
-- request's Idempotency-Key, fenced by its claim token. A row's column or an event's payload
-- field may take the id of one of the decision's postings, named by its index (`posting_ids`).
-- Accounts named by identity are found (write_account_id), or created on their first use. A refusal of the ledger
-- (InsufficientFunds, AccountFrozen, LimitExceeded) raises WRT01 with its details (amounts written in the
-- currency's exponent) before anything else is written, so the caller's transaction (or
-- savepoint) rolls back as a whole: a decision is applied entirely or not at all. A decision
-- that pays recipients out may name an alternative per payee (`holds`: `[{posting, owner_id,
-- instead}]`, one per owner) for when ledger_post refuses that posting for the limits of that
-- owner as payee: the alternative of the owner refused is applied in its place (its postings
-- before that one are the same, already posted; from that one on, its own), and may itself
-- name alternatives (the other payee of the posting it makes). WRT02: a row
-- no longer shows what the decision read; WRT03: the key was taken over; WRT09: a table the
-- path does not write. Answers the ids of the postings, in the decision's order; when an
-- alternative was applied, followed by NULL and the owner of each refusal that chose one, in
-- order (the caller tells which alternative was applied from the answer alone).
-- A row is inserted or updated by a dynamic statement over its JSON, planned on every call; the
-- hottest writes have static statements whose plans the session keeps: a transfer's insert with
-- the columns its decision sets, and the update by id of an escrow, a tontine or a contribution,
-- which sets every column but the id from the row overlaid with the decision's values (a column
-- the decision does not set keeps its value), while the decision sets only columns it lists.
-- This file is what runs today: src/db/database-functions.ts applies it (CREATE OR REPLACE) and
-- test/integration/database-functions.test.ts fails when the database's function differs.
CREATE OR REPLACE FUNCTION write_apply(p_decision jsonb)
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
  -- The columns a transfer's decision sets (src/modules/transfers/transfer-decision.ts), as `cols` spells them.
  transfer_columns CONSTANT text := 'amount_minor, created_at, currency, id, note, posting_id, rail, recipient_identifier, recipient_type, recipient_user_id, sender_user_id, status, updated_at';
  -- The columns the static updates set, as their SET lists name them (test/integration/write-apply-static-updates.test.ts
  -- keeps each list equal to its SET list and to its table's columns but the id).
  escrow_columns CONSTANT text[] := '{buyer_user_id,seller_user_id,created_by_user_id,buyer_identifier,seller_identifier,status,currency,amount_minor,fee_bps,fee_payer,fee_minor,buyer_fee_minor,seller_fee_minor,description,reference,inspection_period_seconds,tracking_reference,delivery_note,dispute_reason,resolution_outcome,resolution_seller_amount_minor,resolution_note,resolved_by_user_id,settled_to_seller_minor,settled_to_buyer_minor,settled_fee_minor,funding_posting_id,settlement_posting_id,funded_at,delivered_at,inspection_ends_at,auto_release_at,accepted_at,disputed_at,resolved_at,released_at,refunded_at,canceled_at,created_at,updated_at,fee_minimum_minor,payout_id,payout_status,payout_reason,payout_held_at,payout_settled_at,payout_recipient}';
  tontine_columns CONSTANT text[] := '{name,organizer_user_id,currency,contribution_minor,frequency,max_members,payout_order,status,seed_commitment,draw_seed,current_cycle,pool_account_id,created_at,started_at,completed_at,canceled_at,draw_per_cycle,dissolution_reason,dissolved_by_user_id,dissolved_at,paid_in_cycle}';
  contribution_columns CONSTANT text[] := '{tontine_id,cycle_number,user_id,status,posting_id,refund_posting_id,paid_at,late_at,refunded_at}';
BEGIN
  -- The alternatives per payee; one `hold` object (as an instance of the previous release sends it during a deploy) is a list of one.
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
    -- The columns the decision sets, as the dynamic statements and the transfer's insert name them (a static update needs none).
    cols := NULL;
    IF item->>'op' = 'insert' OR item->'key' IS NOT NULL OR NOT target IN ('escrows', 'tontines', 'tontine_contributions') THEN
      SELECT string_agg(format('%I', k), ', ' ORDER BY k) INTO cols FROM jsonb_object_keys(vals) AS o(k);
    END IF;
    IF item->>'op' = 'insert' AND target = 'transfers' AND cols = transfer_columns THEN
      -- A transfer's row, the hottest insert: the same columns as the generic insert below, in a
      -- static statement whose plan PL/pgSQL keeps (the dynamic one is planned on every call).
      INSERT INTO transfers (amount_minor, created_at, currency, id, note, posting_id, rail, recipient_identifier, recipient_type, recipient_user_id, sender_user_id, status, updated_at)
      SELECT r.amount_minor, r.created_at, r.currency, r.id, r.note, r.posting_id, r.rail, r.recipient_identifier, r.recipient_type, r.recipient_user_id, r.sender_user_id, r.status, r.updated_at
        FROM jsonb_populate_record(NULL::transfers, vals) AS r;
    ELSIF item->>'op' = 'insert' THEN
      EXECUTE format('INSERT INTO %I (%s) SELECT %s FROM jsonb_populate_record(NULL::%I, $1)', target, cols, cols, target) USING vals;
    ELSIF item->'key' IS NULL AND target IN ('escrows', 'tontines', 'tontine_contributions')
          AND NOT EXISTS (SELECT FROM jsonb_object_keys(vals) AS o(k)
                           WHERE NOT k = ANY (CASE target WHEN 'escrows' THEN escrow_columns WHEN 'tontines' THEN tontine_columns ELSE contribution_columns END)) THEN
      -- An update by id of the hottest rows, in static statements: the same effect as the dynamic one below.
      IF target = 'escrows' THEN
        UPDATE escrows t SET (buyer_user_id, seller_user_id, created_by_user_id, buyer_identifier, seller_identifier, status, currency, amount_minor, fee_bps, fee_payer, fee_minor, buyer_fee_minor, seller_fee_minor, description, reference, inspection_period_seconds, tracking_reference, delivery_note, dispute_reason, resolution_outcome, resolution_seller_amount_minor, resolution_note, resolved_by_user_id, settled_to_seller_minor, settled_to_buyer_minor, settled_fee_minor, funding_posting_id, settlement_posting_id, funded_at, delivered_at, inspection_ends_at, auto_release_at, accepted_at, disputed_at, resolved_at, released_at, refunded_at, canceled_at, created_at, updated_at, fee_minimum_minor, payout_id, payout_status, payout_reason, payout_held_at, payout_settled_at, payout_recipient)
          = (SELECT r.buyer_user_id, r.seller_user_id, r.created_by_user_id, r.buyer_identifier, r.seller_identifier, r.status, r.currency, r.amount_minor, r.fee_bps, r.fee_payer, r.fee_minor, r.buyer_fee_minor, r.seller_fee_minor, r.description, r.reference, r.inspection_period_seconds, r.tracking_reference, r.delivery_note, r.dispute_reason, r.resolution_outcome, r.resolution_seller_amount_minor, r.resolution_note, r.resolved_by_user_id, r.settled_to_seller_minor, r.settled_to_buyer_minor, r.settled_fee_minor, r.funding_posting_id, r.settlement_posting_id, r.funded_at, r.delivered_at, r.inspection_ends_at, r.auto_release_at, r.accepted_at, r.disputed_at, r.resolved_at, r.released_at, r.refunded_at, r.canceled_at, r.created_at, r.updated_at, r.fee_minimum_minor, r.payout_id, r.payout_status, r.payout_reason, r.payout_held_at, r.payout_settled_at, r.payout_recipient
               FROM jsonb_populate_record(t, vals) AS r)
         WHERE t.id = (item->>'id')::uuid AND to_jsonb(t) @> coalesce(item->'expect', '{}'::jsonb);
      ELSIF target = 'tontines' THEN
        UPDATE tontines t SET (name, organizer_user_id, currency, contribution_minor, frequency, max_members, payout_order, status, seed_commitment, draw_seed, current_cycle, pool_account_id, created_at, started_at, completed_at, canceled_at, draw_per_cycle, dissolution_reason, dissolved_by_user_id, dissolved_at, paid_in_cycle)
          = (SELECT r.name, r.organizer_user_id, r.currency, r.contribution_minor, r.frequency, r.max_members, r.payout_order, r.status, r.seed_commitment, r.draw_seed, r.current_cycle, r.pool_account_id, r.created_at, r.started_at, r.completed_at, r.canceled_at, r.draw_per_cycle, r.dissolution_reason, r.dissolved_by_user_id, r.dissolved_at, r.paid_in_cycle
               FROM jsonb_populate_record(t, vals) AS r)
         WHERE t.id = (item->>'id')::uuid AND to_jsonb(t) @> coalesce(item->'expect', '{}'::jsonb);
      ELSE
        UPDATE tontine_contributions t SET (tontine_id, cycle_number, user_id, status, posting_id, refund_posting_id, paid_at, late_at, refunded_at)
          = (SELECT r.tontine_id, r.cycle_number, r.user_id, r.status, r.posting_id, r.refund_posting_id, r.paid_at, r.late_at, r.refunded_at FROM jsonb_populate_record(t, vals) AS r)
         WHERE t.id = (item->>'id')::uuid AND to_jsonb(t) @> coalesce(item->'expect', '{}'::jsonb);
      END IF;
      GET DIAGNOSTICS changed = ROW_COUNT;
      IF changed <> 1 THEN
        RAISE EXCEPTION 'the % row % no longer shows what the decision read', target, jsonb_build_object('id', item->'id') USING ERRCODE = 'WRT02';
      END IF;
    ELSE
      -- The row by its id, or by the columns of its key (a table whose rows have no id of their own).
      IF cols IS NULL THEN
        SELECT string_agg(format('%I', k), ', ' ORDER BY k) INTO cols FROM jsonb_object_keys(vals) AS o(k);
      END IF;
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
