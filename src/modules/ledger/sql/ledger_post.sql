-- The one posting function: every movement of money (transfers, payments, escrows, tontines,
-- funding) writes its posting, its entries and the balances through it. It locks each touched
-- account in id order (one global order: postings never deadlock each other), refuses a
-- negative balance unless the account allows it and a frozen account unless asked (refusals
-- are answers: nothing is written and the caller's transaction goes on), checks once per
-- posting that the entries balance per currency, and raises the transaction-local flag
-- `ledger.posting` that the guards (ledger_refuse_write) require of every direct write.
-- Under the same locks it enforces the tier limits (limit_policies, written at boot from
-- src/modules/limits/tier-policy.json) of the wallets of users and the accounts of
-- organisations: the payers' per-transaction and daily outflow caps first, then the payees'
-- per-transaction, balance and monthly inflow caps, answering LimitExceeded with the limit, the
-- cap, what remains, the tier, the owner and the direction ('out' or 'in'). The usage is kept
-- as running counters on the account row (this UTC month's inflow, this UTC day's outflow),
-- moved by the same UPDATE as the balance. Money returned (p_allow_frozen, a reversal) and the
-- operator's funding (`wallet.funding`) are neither checked nor counted; a balance already
-- above its cap never blocks a debit. A tontine's pot (`tontine.payout`) and a crypto deposit's
-- credit (`crypto.deposit`) reach a frozen wallet but are checked and counted as any other
-- movement: a pot its beneficiary cannot receive is held in the pool, a deposit its owner cannot
-- receive in the network's clearing account (src/modules/held-payouts), never credited over a cap.
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
  owner_types text[] := '{}';
  tracked boolean[] := '{}';
  tiers text[] := '{}';
  cap_balance bigint[] := '{}';
  cap_inflow bigint[] := '{}';
  cap_outflow bigint[] := '{}';
  cap_transaction bigint[] := '{}';
  used_inflow bigint[] := '{}';
  used_outflow bigint[] := '{}';
  v_today date := (now() AT TIME ZONE 'UTC')::date;
  v_month date := date_trunc('month', (now() AT TIME ZONE 'UTC'))::date;
  v_limited boolean := (NOT p_allow_frozen OR p_kind IN ('tontine.payout', 'crypto.deposit')) AND p_reverses IS NULL AND p_kind <> 'wallet.funding';
  v_limit text;
  v_cap bigint;
  v_remaining bigint;
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
    SELECT a.id, a.owner_id, a.owner_type, a.kind, a.currency::text AS currency, a.status, a.allow_negative, a.balance_minor, d.delta,
           CASE WHEN a.inflow_month = v_month THEN a.inflow_month_minor ELSE 0 END AS inflow_used,
           CASE WHEN a.outflow_day = v_today THEN a.outflow_day_minor ELSE 0 END AS outflow_used,
           lp.tier AS limit_tier, lp.balance_minor AS cap_balance, lp.monthly_inflow_minor AS cap_inflow,
           lp.daily_outflow_minor AS cap_outflow, lp.per_transaction_minor AS cap_transaction
      FROM (SELECT x.account_id, sum(x.amount)::bigint AS delta FROM unnest(p_accounts, p_amounts) AS x(account_id, amount) GROUP BY x.account_id) d
      JOIN ledger_accounts a ON a.id = d.account_id
      -- The tier of a limited account: its user's, or its organisation's verification.
      LEFT JOIN users u ON a.owner_type = 'user' AND a.kind = 'wallet' AND u.id = a.owner_id
      LEFT JOIN organizations o ON a.owner_type = 'organization' AND a.kind = 'org_account' AND o.id = a.owner_id
      LEFT JOIN limit_policies lp ON lp.currency = a.currency::text
       AND lp.tier = coalesce(u.tier, CASE WHEN o.verification_status = 'verified' THEN 'verified' WHEN o.id IS NOT NULL THEN 'unverified' END)
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
    owner_types := owner_types || acct.owner_type;
    tracked := tracked || ((acct.owner_type = 'user' AND acct.kind = 'wallet') OR (acct.owner_type = 'organization' AND acct.kind = 'org_account'));
    tiers := tiers || acct.limit_tier;
    cap_balance := cap_balance || acct.cap_balance;
    cap_inflow := cap_inflow || acct.cap_inflow;
    cap_outflow := cap_outflow || acct.cap_outflow;
    cap_transaction := cap_transaction || acct.cap_transaction;
    used_inflow := used_inflow || acct.inflow_used;
    used_outflow := used_outflow || acct.outflow_used;
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
  -- The tier limits: every payer's first (its own limit), then every payee's.
  IF v_limited THEN
    FOR k IN 1..cardinality(touched_ids) LOOP
      CONTINUE WHEN tiers[k] IS NULL OR deltas[k] >= 0;
      IF -deltas[k] > cap_transaction[k] THEN
        v_limit := 'per_transaction'; v_cap := cap_transaction[k]; v_remaining := cap_transaction[k];
      ELSIF used_outflow[k] - deltas[k] > cap_outflow[k] THEN
        v_limit := 'daily_outflow'; v_cap := cap_outflow[k]; v_remaining := greatest(cap_outflow[k] - used_outflow[k], 0);
      END IF;
      IF v_limit IS NOT NULL THEN
        refusal := 'LimitExceeded';
        refusal_detail := json_build_object('account_id', touched_ids[k], 'owner_id', owners[k], 'owner_type', owner_types[k], 'currency', account_currencies[k],
                                            'direction', 'out', 'limit', v_limit, 'limit_minor', v_cap::text, 'remaining_minor', v_remaining::text, 'tier', tiers[k]);
        RETURN;
      END IF;
    END LOOP;
    FOR k IN 1..cardinality(touched_ids) LOOP
      CONTINUE WHEN tiers[k] IS NULL OR deltas[k] <= 0;
      IF deltas[k] > cap_transaction[k] THEN
        v_limit := 'per_transaction'; v_cap := cap_transaction[k]; v_remaining := cap_transaction[k];
      ELSIF balances[k] > cap_balance[k] THEN
        v_limit := 'balance'; v_cap := cap_balance[k]; v_remaining := greatest(cap_balance[k] - (balances[k] - deltas[k]), 0);
      ELSIF used_inflow[k] + deltas[k] > cap_inflow[k] THEN
        v_limit := 'monthly_inflow'; v_cap := cap_inflow[k]; v_remaining := greatest(cap_inflow[k] - used_inflow[k], 0);
      END IF;
      IF v_limit IS NOT NULL THEN
        refusal := 'LimitExceeded';
        refusal_detail := json_build_object('account_id', touched_ids[k], 'owner_id', owners[k], 'owner_type', owner_types[k], 'currency', account_currencies[k],
                                            'direction', 'in', 'limit', v_limit, 'limit_minor', v_cap::text, 'remaining_minor', v_remaining::text, 'tier', tiers[k]);
        RETURN;
      END IF;
    END LOOP;
  END IF;

  PERFORM set_config('ledger.posting', 'on', true);
  INSERT INTO postings (kind, reference, metadata, reverses_posting_id)
    VALUES (p_kind, p_reference, coalesce(p_metadata, '{}'::jsonb), p_reverses)
    RETURNING id, postings.created_at INTO posting_id, created_at;
  -- The balances and, for a counted movement, the limits' running counters (a new period starts at zero).
  UPDATE ledger_accounts a SET balance_minor = a.balance_minor + d.delta, updated_at = now(),
         inflow_month = CASE WHEN d.counted AND d.delta > 0 THEN v_month ELSE a.inflow_month END,
         inflow_month_minor = CASE WHEN d.counted AND d.delta > 0 THEN d.inflow_used + d.delta ELSE a.inflow_month_minor END,
         outflow_day = CASE WHEN d.counted AND d.delta < 0 THEN v_today ELSE a.outflow_day END,
         outflow_day_minor = CASE WHEN d.counted AND d.delta < 0 THEN d.outflow_used - d.delta ELSE a.outflow_day_minor END
    FROM (SELECT x.account_id, x.delta, x.inflow_used, x.outflow_used, v_limited AND x.tracked AS counted
            FROM unnest(touched_ids, deltas, used_inflow, used_outflow, tracked) AS x(account_id, delta, inflow_used, outflow_used, tracked)) d
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
