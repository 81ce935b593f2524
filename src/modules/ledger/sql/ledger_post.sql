-- The one posting function: every movement of money (transfers, payments, escrows, tontines,
-- funding) writes its posting, its entries and the balances through it. It locks each touched
-- account in id order (one global order: postings never deadlock each other), refuses a
-- negative balance unless the account allows it and a frozen account unless asked (refusals
-- are answers: nothing is written and the caller's transaction goes on), checks once per
-- posting that the entries balance per currency, and raises the transaction-local flag
-- `ledger.posting` that the guards (ledger_refuse_write) require of every direct write.
-- This file is what runs today: src/db/database-functions.ts applies it (CREATE OR REPLACE) and
-- test/integration/database-functions.test.ts fails when the database's function differs.
CREATE OR REPLACE FUNCTION ledger_post(
  p_kind text, p_reference text, p_metadata jsonb, p_reverses uuid,
  p_accounts uuid[], p_amounts bigint[], p_allow_frozen boolean,
  OUT refusal text, OUT refusal_detail json,
  OUT posting_id uuid, OUT created_at timestamptz,
  OUT entry_ids bigint[], OUT entry_accounts uuid[], OUT entry_currencies text[], OUT entry_amounts bigint[],
  OUT balance_accounts uuid[], OUT balances bigint[])
LANGUAGE plpgsql AS $$
DECLARE
  n integer := coalesce(cardinality(p_accounts), 0);
  acct record;
  touched_ids uuid[] := '{}';
  deltas bigint[] := '{}';
  account_currencies text[] := '{}';
  owners uuid[] := '{}';
  statuses text[] := '{}';
  may_go_negative boolean[] := '{}';
  sum_currencies text[] := '{}';
  sums numeric[] := '{}';
  k integer;
BEGIN
  IF n < 2 OR n <> coalesce(cardinality(p_amounts), 0) THEN
    RAISE EXCEPTION 'posting %/% has fewer than two entries', p_kind, p_reference USING ERRCODE = 'LDG01';
  END IF;
  FOR i IN 1..n LOOP
    IF p_amounts[i] IS NULL OR p_amounts[i] = 0 OR p_accounts[i] IS NULL THEN
      RAISE EXCEPTION 'posting %/%: an entry needs an account and a non-zero amount', p_kind, p_reference USING ERRCODE = 'LDG01';
    END IF;
  END LOOP;

  -- Lock every touched account in id order (postings never deadlock each other), then check.
  balance_accounts := '{}';
  balances := '{}';
  FOR acct IN
    SELECT a.id, a.owner_id, a.currency::text AS currency, a.status, a.allow_negative, a.balance_minor, d.delta
      FROM (SELECT x.account_id, sum(x.amount)::bigint AS delta FROM unnest(p_accounts, p_amounts) AS x(account_id, amount) GROUP BY x.account_id) d
      JOIN ledger_accounts a ON a.id = d.account_id
     ORDER BY a.id
       FOR UPDATE OF a
  LOOP
    touched_ids := touched_ids || acct.id;
    deltas := deltas || acct.delta;
    account_currencies := account_currencies || acct.currency;
    owners := owners || acct.owner_id;
    statuses := statuses || acct.status;
    may_go_negative := may_go_negative || acct.allow_negative;
    balance_accounts := balance_accounts || acct.id;
    balances := balances || (acct.balance_minor + acct.delta);
    k := array_position(sum_currencies, acct.currency);
    IF k IS NULL THEN
      sum_currencies := sum_currencies || acct.currency;
      sums := sums || acct.delta::numeric;
    ELSE
      sums[k] := sums[k] + acct.delta;
    END IF;
  END LOOP;
  FOR i IN 1..n LOOP
    IF array_position(touched_ids, p_accounts[i]) IS NULL THEN
      RAISE EXCEPTION 'unknown ledger account %', p_accounts[i] USING ERRCODE = 'LDG02';
    END IF;
  END LOOP;
  -- Once per posting: the entries balance in every currency.
  FOR k IN 1..cardinality(sums) LOOP
    IF sums[k] <> 0 THEN
      RAISE EXCEPTION 'posting %/% does not balance in % (sum %)', p_kind, p_reference, sum_currencies[k], sums[k] USING ERRCODE = 'LDG05';
    END IF;
  END LOOP;
  -- Refusals are answers, not errors: nothing is written and the caller's transaction goes on.
  FOR k IN 1..cardinality(touched_ids) LOOP
    IF statuses[k] <> 'active' AND NOT p_allow_frozen THEN
      refusal := 'AccountFrozen';
      refusal_detail := json_build_object('account_id', touched_ids[k], 'owner_id', owners[k]);
      RETURN;
    END IF;
    IF NOT may_go_negative[k] AND balances[k] < 0 THEN
      refusal := 'InsufficientFunds';
      refusal_detail := json_build_object('account_id', touched_ids[k], 'owner_id', owners[k], 'currency', account_currencies[k],
                                          'available', (balances[k] - deltas[k])::text, 'required', (-deltas[k])::text);
      RETURN;
    END IF;
  END LOOP;

  PERFORM set_config('ledger.posting', 'on', true);
  INSERT INTO postings (kind, reference, metadata, reverses_posting_id)
    VALUES (p_kind, p_reference, coalesce(p_metadata, '{}'::jsonb), p_reverses)
    RETURNING id, postings.created_at INTO posting_id, created_at;
  UPDATE ledger_accounts a SET balance_minor = a.balance_minor + d.delta, updated_at = now()
    FROM unnest(touched_ids, deltas) AS d(account_id, delta)
   WHERE a.id = d.account_id;
  -- Entries in account id order, the order in which their accounts were locked.
  WITH e AS (
    INSERT INTO entries (posting_id, account_id, currency, amount_minor)
    SELECT ledger_post.posting_id, x.account_id, account_currencies[array_position(touched_ids, x.account_id)], x.amount
      FROM unnest(p_accounts, p_amounts) WITH ORDINALITY AS x(account_id, amount, n)
     ORDER BY x.account_id, x.n
    RETURNING id, account_id, currency, amount_minor
  )
  SELECT array_agg(e.id ORDER BY e.id), array_agg(e.account_id ORDER BY e.id), array_agg(e.currency::text ORDER BY e.id), array_agg(e.amount_minor ORDER BY e.id)
    INTO entry_ids, entry_accounts, entry_currencies, entry_amounts FROM e;
  PERFORM set_config('ledger.posting', 'off', true);
END;
$$;
