import type { Knex } from 'knex';

/**
 * One posting path in the database, and a transfer in one round trip.
 *
 * `ledger_post` is the only writer of postings, entries and balances: it locks and moves each
 * touched account in id order (one conditional UPDATE each: no negative balance unless the
 * account allows it, no frozen account unless asked), checks once per posting that the
 * entries balance per currency, and writes the posting and its entries. Direct writes are
 * refused by guards that cost nothing on the posting path (trigger WHEN clauses on a
 * transaction-local flag that only `ledger_post` raises, and lowers before it returns):
 * - INSERT into postings or entries, UPDATE OF ledger_accounts.balance_minor, DELETE of an
 *   account: refused with SQLSTATE 42501 outside `ledger_post` (the role is a superuser on
 *   both back-ends, so a REVOKE would not bind it: the guard is the equivalent);
 * - entries and postings stay append-only (the older UPDATE/DELETE/TRUNCATE triggers).
 * This replaces the per-entry triggers (balance trigger, balance guard, deferred balanced
 * check) and the per-entry foreign keys: entries are written only by `ledger_post`, which
 * takes each entry's account and currency from the locked account row itself.
 *
 * `transfer_create` is POST /transfers: the session, the idempotency key (claimed in the
 * same transaction as the effect), the recipient, the wallets, the posting, the transfer
 * row and the completed key, in one statement. Refusals are SQLSTATEs mapped by the
 * transfers module to the same domain errors as before; DETAIL carries their JSON details.
 */

const LEDGER_POST = String.raw`
CREATE FUNCTION ledger_post(
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
$$`;

const TRANSFER_CREATE = String.raw`
CREATE FUNCTION transfer_create(
  p_session_id uuid, p_user_id uuid, p_operation text, p_key text, p_request_hash text,
  p_lease_seconds integer, p_ttl_hours integer,
  p_currency text, p_amount bigint, p_note text,
  p_identifier_kind text, p_identifier text, p_rail text, p_phone_valid boolean)
RETURNS SETOF transfers
LANGUAGE plpgsql AS $$
DECLARE
  session_row record;
  key_row idempotency_keys%ROWTYPE;
  key_found boolean;
  sender record;
  recipient record;
  by_email text;
  by_phone text;
  v_rail text;
  v_type text;
  v_recipient_user uuid;
  from_wallet record;
  to_wallet record;
  to_account uuid;
  v_id uuid := gen_random_uuid();
  v_status text;
  posted record;
  v_transfer transfers%ROWTYPE;
BEGIN
  IF p_session_id IS NOT NULL THEN
    SELECT s.revoked_at, s.expires_at, u.status INTO session_row
      FROM sessions s JOIN users u ON u.id = s.user_id
     WHERE s.id = p_session_id AND s.user_id = p_user_id;
    IF NOT FOUND OR session_row.revoked_at IS NOT NULL OR session_row.expires_at <= now() THEN
      RAISE EXCEPTION 'session ended' USING ERRCODE = 'TRF01';
    ELSIF session_row.status <> 'active' THEN
      RAISE EXCEPTION 'account not active' USING ERRCODE = 'TRF02', DETAIL = session_row.status;
    END IF;
  END IF;

  -- The key: a concurrent holder is told so at once; a replay or a reuse answers from the row.
  IF NOT pg_try_advisory_xact_lock(hashtextextended(p_user_id::text || ' ' || p_operation || ' ' || p_key, 0)) THEN
    RAISE EXCEPTION 'key in use' USING ERRCODE = 'TRF03';
  END IF;
  SELECT * INTO key_row FROM idempotency_keys WHERE user_id = p_user_id AND key = p_key AND operation = p_operation FOR UPDATE;
  key_found := FOUND;
  IF key_found AND NOT (key_row.expires_at <= now() OR (key_row.status = 'in_progress' AND key_row.locked_until <= now())) THEN
    IF key_row.request_hash <> p_request_hash THEN
      RAISE EXCEPTION 'key reused' USING ERRCODE = 'TRF05', DETAIL = json_build_object(
        'operation', key_row.operation, 'status', key_row.status, 'resource_type', key_row.resource_type,
        'resource_id', key_row.resource_id, 'resource_status', coalesce((SELECT t.status FROM transfers t WHERE t.id = key_row.resource_id), key_row.resource_status),
        'location', key_row.resource_location)::text;
    ELSIF key_row.status = 'in_progress' THEN
      RAISE EXCEPTION 'key in use' USING ERRCODE = 'TRF03';
    END IF;
    RAISE EXCEPTION 'key processed' USING ERRCODE = 'TRF04', DETAIL = json_build_object(
      'resource_type', key_row.resource_type, 'resource_id', key_row.resource_id,
      'resource_status', coalesce((SELECT t.status FROM transfers t WHERE t.id = key_row.resource_id), key_row.resource_status),
      'location', key_row.resource_location)::text;
  END IF;

  -- The parties (one query): the sender and, by e-mail or phone, a platform user.
  IF p_identifier_kind = 'email' THEN by_email := p_identifier;
  ELSIF p_identifier_kind = 'phone' AND p_rail IS DISTINCT FROM 'mobile_money' THEN by_phone := p_identifier;
  END IF;
  FOR recipient IN SELECT u.id, u.email, u.phone, u.status FROM users u WHERE u.id = p_user_id OR u.email = by_email OR u.phone = by_phone LOOP
    IF recipient.id = p_user_id THEN sender := recipient; END IF;
    IF (by_email IS NOT NULL AND recipient.email = by_email) OR (by_phone IS NOT NULL AND recipient.phone = by_phone) THEN
      v_recipient_user := recipient.id;
      v_status := recipient.status;
    END IF;
  END LOOP;

  IF p_identifier_kind = 'iban' THEN
    v_rail := 'bank'; v_type := 'iban'; v_recipient_user := NULL;
  ELSIF p_identifier_kind = 'phone' AND p_rail = 'mobile_money' THEN
    v_rail := 'mobile_money'; v_type := 'msisdn'; v_recipient_user := NULL;
  ELSIF v_recipient_user IS NOT NULL AND v_status <> 'disabled' THEN
    IF v_recipient_user = p_user_id THEN RAISE EXCEPTION 'self transfer' USING ERRCODE = 'TRF07'; END IF;
    v_rail := 'p2p'; v_type := 'user';
  ELSIF p_identifier_kind = 'phone' AND p_rail IS NULL THEN
    IF NOT p_phone_valid THEN RAISE EXCEPTION 'invalid phone' USING ERRCODE = 'TRF08'; END IF;
    v_rail := 'mobile_money'; v_type := 'msisdn'; v_recipient_user := NULL;
  ELSE
    RAISE EXCEPTION 'recipient not found' USING ERRCODE = 'TRF06';
  END IF;

  IF sender.id IS NULL OR sender.status = 'disabled' THEN RAISE EXCEPTION 'sender gone' USING ERRCODE = 'TRF09'; END IF;
  IF sender.status = 'locked' THEN RAISE EXCEPTION 'sender locked' USING ERRCODE = 'TRF10'; END IF;

  -- Checks before any lock, with the transfer's own errors (ledger_post repeats them under the lock).
  SELECT id, status, balance_minor INTO from_wallet FROM ledger_accounts
   WHERE owner_type = 'user' AND owner_id = p_user_id AND currency = p_currency AND kind = 'wallet' AND external_ref IS NULL;
  IF FOUND AND from_wallet.status = 'frozen' THEN
    RAISE EXCEPTION 'wallet frozen' USING ERRCODE = 'TRF11', DETAIL = '{"party":"sender"}';
  END IF;
  IF coalesce(from_wallet.balance_minor, 0) < p_amount THEN
    RAISE EXCEPTION 'insufficient funds' USING ERRCODE = 'TRF12',
      DETAIL = json_build_object('available', coalesce(from_wallet.balance_minor, 0)::text, 'required', p_amount::text)::text;
  END IF;
  IF v_recipient_user IS NOT NULL THEN
    SELECT id, status INTO to_wallet FROM ledger_accounts
     WHERE owner_type = 'user' AND owner_id = v_recipient_user AND currency = p_currency AND kind = 'wallet' AND external_ref IS NULL;
    IF FOUND AND to_wallet.status = 'frozen' THEN
      RAISE EXCEPTION 'wallet frozen' USING ERRCODE = 'TRF11', DETAIL = '{"party":"recipient"}';
    END IF;
    to_account := to_wallet.id;
    IF to_account IS NULL THEN
      INSERT INTO ledger_accounts (owner_type, owner_id, currency, kind) VALUES ('user', v_recipient_user, p_currency, 'wallet')
        ON CONFLICT ON CONSTRAINT ledger_accounts_identity DO NOTHING RETURNING id INTO to_account;
    END IF;
  ELSE
    SELECT id INTO to_account FROM ledger_accounts
     WHERE owner_type = 'platform' AND owner_id IS NULL AND currency = p_currency AND kind = 'rail_transit' AND external_ref = v_rail;
    IF NOT FOUND THEN
      INSERT INTO ledger_accounts (owner_type, owner_id, currency, kind, external_ref) VALUES ('platform', NULL, p_currency, 'rail_transit', v_rail)
        ON CONFLICT ON CONSTRAINT ledger_accounts_identity DO NOTHING RETURNING id INTO to_account;
    END IF;
  END IF;
  IF to_account IS NULL THEN
    -- Created by a concurrent transaction between our read and our insert (and committed).
    SELECT id INTO to_account FROM ledger_accounts
     WHERE owner_type = CASE WHEN v_recipient_user IS NULL THEN 'platform' ELSE 'user' END
       AND owner_id IS NOT DISTINCT FROM v_recipient_user AND currency = p_currency
       AND kind = CASE WHEN v_recipient_user IS NULL THEN 'rail_transit' ELSE 'wallet' END
       AND external_ref IS NOT DISTINCT FROM CASE WHEN v_recipient_user IS NULL THEN v_rail END;
  END IF;

  SELECT * INTO posted FROM ledger_post('transfer.' || v_rail, v_id::text,
    json_build_object('transfer_id', v_id, 'sender_user_id', p_user_id, 'rail', v_rail)::jsonb, NULL,
    ARRAY[from_wallet.id, to_account], ARRAY[-p_amount, p_amount], false);
  -- Refused under the lock (a concurrent request moved the balance or froze a wallet meanwhile).
  IF posted.refusal = 'AccountFrozen' THEN
    RAISE EXCEPTION 'wallet frozen' USING ERRCODE = 'TRF11', DETAIL = json_build_object(
      'party', CASE WHEN posted.refusal_detail->>'owner_id' = p_user_id::text THEN 'sender' ELSE 'recipient' END)::text;
  ELSIF posted.refusal = 'InsufficientFunds' THEN
    RAISE EXCEPTION 'insufficient funds' USING ERRCODE = 'TRF12', DETAIL = json_build_object(
      'available', posted.refusal_detail->>'available', 'required', posted.refusal_detail->>'required')::text;
  END IF;

  INSERT INTO transfers (id, sender_user_id, rail, status, currency, amount_minor, recipient_type, recipient_identifier, recipient_user_id, note, posting_id)
  VALUES (v_id, p_user_id, v_rail, CASE WHEN v_rail = 'p2p' THEN 'completed' ELSE 'pending' END, p_currency, p_amount, v_type, p_identifier, v_recipient_user, p_note, posted.posting_id)
  RETURNING * INTO v_transfer;

  IF key_found THEN
    UPDATE idempotency_keys SET request_hash = p_request_hash, status = 'completed', claim_token = gen_random_uuid(), locked_until = now(),
           created_at = now(), expires_at = now() + make_interval(hours => p_ttl_hours), response_status = 200, response_body = NULL,
           resource_type = 'transfer', resource_id = v_id, resource_status = v_transfer.status,
           resource_location = '/api/transfers/' || v_id, completed_at = now()
     WHERE id = key_row.id;
  ELSE
    INSERT INTO idempotency_keys (user_id, operation, key, request_hash, status, claim_token, locked_until, expires_at,
                                  response_status, resource_type, resource_id, resource_status, resource_location, completed_at)
    VALUES (p_user_id, p_operation, p_key, p_request_hash, 'completed', gen_random_uuid(), now(), now() + make_interval(hours => p_ttl_hours),
            200, 'transfer', v_id, v_transfer.status, '/api/transfers/' || v_id, now());
  END IF;
  RETURN NEXT v_transfer;
END;
$$`;

export async function up(knex: Knex): Promise<void> {
  // Per-entry work goes: balances move inside ledger_post, the balanced check runs once per posting.
  await knex.raw(`
    DROP TRIGGER entries_apply_balance ON entries;
    DROP TRIGGER entries_posting_balanced ON entries;
    DROP TRIGGER postings_have_entries ON postings;
    DROP TRIGGER ledger_accounts_guard_balance ON ledger_accounts;
    DROP FUNCTION ledger_apply_entry();
    DROP FUNCTION ledger_check_posting_balanced();
    DROP FUNCTION ledger_check_posting_has_entries();
    DROP FUNCTION ledger_guard_balance();
    ALTER TABLE entries DROP CONSTRAINT entries_account_currency_fk;
    ALTER TABLE entries DROP CONSTRAINT entries_posting_id_foreign;
  `);
  await knex.raw(`
    CREATE FUNCTION ledger_refuse_write() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'insufficient_privilege';
    END;
    $$;
    CREATE TRIGGER postings_written_by_ledger_post BEFORE INSERT ON postings FOR EACH STATEMENT
      WHEN (current_setting('ledger.posting', true) IS DISTINCT FROM 'on')
      EXECUTE FUNCTION ledger_refuse_write('postings are written only through ledger_post()');
    CREATE TRIGGER entries_written_by_ledger_post BEFORE INSERT ON entries FOR EACH STATEMENT
      WHEN (current_setting('ledger.posting', true) IS DISTINCT FROM 'on')
      EXECUTE FUNCTION ledger_refuse_write('entries are written only through ledger_post()');
    CREATE TRIGGER ledger_accounts_balance_by_ledger_post BEFORE UPDATE OF balance_minor ON ledger_accounts FOR EACH STATEMENT
      WHEN (current_setting('ledger.posting', true) IS DISTINCT FROM 'on')
      EXECUTE FUNCTION ledger_refuse_write('ledger_accounts.balance_minor changes only through ledger entries, written by ledger_post()');
    CREATE TRIGGER ledger_accounts_start_at_zero BEFORE INSERT ON ledger_accounts FOR EACH ROW
      WHEN (NEW.balance_minor <> 0)
      EXECUTE FUNCTION ledger_refuse_write('a ledger account starts with a zero balance; fund it with a posting');
    CREATE TRIGGER ledger_accounts_fixed_terms BEFORE UPDATE OF currency, allow_negative ON ledger_accounts FOR EACH ROW
      WHEN (NEW.currency IS DISTINCT FROM OLD.currency OR NEW.allow_negative IS DISTINCT FROM OLD.allow_negative)
      EXECUTE FUNCTION ledger_refuse_write('the currency and allow_negative of a ledger account never change');
    CREATE TRIGGER ledger_accounts_kept BEFORE DELETE OR TRUNCATE ON ledger_accounts FOR EACH STATEMENT
      EXECUTE FUNCTION ledger_refuse_write('ledger accounts are never deleted (freeze them instead)');
  `);
  await knex.raw(LEDGER_POST);

  // A transfer's currency is the currency of its posting's accounts; a format CHECK replaces
  // the foreign key that made every transfer share-lock the same currencies row.
  await knex.raw(`
    ALTER TABLE transfers DROP CONSTRAINT transfers_currency_foreign;
    ALTER TABLE transfers ADD CONSTRAINT transfers_currency_format CHECK (currency ~ '^[A-Z]{3}$');
    ALTER TABLE transfers DROP CONSTRAINT transfers_posting_unique;
    DROP INDEX transfers_recipient_index;
  `);
  // One unique index serves the claim (user, key, operation) and the look-up by (user, key).
  await knex.raw(`
    CREATE UNIQUE INDEX idempotency_keys_user_key_operation_unique ON idempotency_keys (user_id, key, operation);
    ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_scope_unique;
    DROP INDEX idempotency_keys_user_key_index;
  `);
  await knex.raw(TRANSFER_CREATE);
}

/** Forward only: balances moved inside ledger_post cannot be handed back to the per-entry triggers safely. */
export async function down(): Promise<void> {
  throw new Error('20261123000900_posting_functions is forward-only: restore a backup taken before it to go back');
}
