import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * POST /transfers on the one write path: its decisions are applied a window at a time by
 * write_apply_batch (each transfer: write_claim, then write_apply, in its own subtransaction),
 * so the transfer's own functions go: transfer_create (the session, the key, the parties, the
 * wallets' checks and accounts that ledger_post and write_apply already own) and its group
 * commit transfer_create_batch. Down puts them back as they were (their text below).
 * write_apply finds an account named by identity through write_account_id, by the identity
 * index (its lookup by IS NOT DISTINCT FROM read every account of the owner type).
 */
export const FUNCTIONS = {
  write_account_id: 'c7266722abe4e032',
  write_apply: 'fba126aee9290a3f',
  write_apply_batch: '0c75edb85c758689',
};

export async function up(knex: Knex): Promise<void> {
  await knex.raw('DROP FUNCTION IF EXISTS transfer_create_batch(jsonb)');
  await knex.raw('DROP FUNCTION IF EXISTS transfer_create(uuid, uuid, text, text, text, integer, integer, text, bigint, text, text, text, text, boolean, uuid)');
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

export async function down(knex: Knex): Promise<void> {
  // write_apply and write_account_id stay: write_apply does what it did, found by the index.
  await knex.raw('DROP FUNCTION IF EXISTS write_apply_batch(jsonb)');
  await knex.raw(TRANSFER_CREATE);
  await knex.raw(TRANSFER_CREATE_BATCH);
}

const TRANSFER_CREATE = String.raw`CREATE OR REPLACE FUNCTION transfer_create(
  p_session_id uuid, p_user_id uuid, p_operation text, p_key text, p_request_hash text,
  p_lease_seconds integer, p_ttl_hours integer,
  p_currency text, p_amount bigint, p_note text,
  p_identifier_kind text, p_identifier text, p_rail text, p_phone_valid boolean,
  p_attempt uuid DEFAULT NULL)
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

  -- The key. A finished key is answered as finished, before anything refuses on the key's lock:
  -- a completed row that has not expired never changes, so a plain read is enough (parallel
  -- replays all answer IdempotencyKeyAlreadyProcessed). Otherwise a concurrent holder of the
  -- key is told so at once, and a replay or a reuse answers from the row read under the lock.
  SELECT * INTO key_row FROM idempotency_keys WHERE user_id = p_user_id AND key = p_key AND operation = p_operation;
  key_found := FOUND;
  -- p_attempt names this request across its runs (a batch that failed as a whole runs its items
  -- again): when the key was completed by this very request, whose commit the fault hid, the
  -- transfer it made is its answer, not a 409.
  IF key_found AND key_row.status = 'completed' AND key_row.expires_at > now() AND key_row.claim_token = p_attempt THEN
    RETURN QUERY SELECT * FROM transfers WHERE id = key_row.resource_id;
    RETURN;
  END IF;
  IF NOT (key_found AND key_row.status = 'completed' AND key_row.expires_at > now()) THEN
    IF NOT pg_try_advisory_xact_lock(hashtextextended(p_user_id::text || ' ' || p_operation || ' ' || p_key, 0)) THEN
      RAISE EXCEPTION 'key in use' USING ERRCODE = 'TRF03';
    END IF;
    SELECT * INTO key_row FROM idempotency_keys WHERE user_id = p_user_id AND key = p_key AND operation = p_operation FOR UPDATE;
    key_found := FOUND;
  END IF;
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
  ELSIF posted.refusal = 'LimitExceeded' AND posted.refusal_detail->>'owner_id' = p_user_id::text THEN
    RAISE EXCEPTION 'limit exceeded' USING ERRCODE = 'TRF13', DETAIL = posted.refusal_detail::text;
  ELSIF posted.refusal = 'LimitExceeded' THEN
    -- The recipient's limit: nothing of its balance or tier leaves this function.
    RAISE EXCEPTION 'recipient cannot receive' USING ERRCODE = 'TRF14';
  ELSIF posted.refusal IS NOT NULL THEN
    RAISE EXCEPTION 'ledger refusal %', posted.refusal;
  END IF;

  INSERT INTO transfers (id, sender_user_id, rail, status, currency, amount_minor, recipient_type, recipient_identifier, recipient_user_id, note, posting_id)
  VALUES (v_id, p_user_id, v_rail, CASE WHEN v_rail = 'p2p' THEN 'completed' ELSE 'pending' END, p_currency, p_amount, v_type, p_identifier, v_recipient_user, p_note, posted.posting_id)
  RETURNING * INTO v_transfer;

  IF key_found THEN
    UPDATE idempotency_keys SET request_hash = p_request_hash, status = 'completed', claim_token = coalesce(p_attempt, gen_random_uuid()), locked_until = now(),
           created_at = now(), expires_at = now() + make_interval(hours => p_ttl_hours), response_status = 200, response_body = NULL,
           resource_type = 'transfer', resource_id = v_id, resource_status = v_transfer.status,
           resource_location = '/api/transfers/' || v_id, completed_at = now()
     WHERE id = key_row.id;
  ELSE
    INSERT INTO idempotency_keys (user_id, operation, key, request_hash, status, claim_token, locked_until, expires_at,
                                  response_status, resource_type, resource_id, resource_status, resource_location, completed_at)
    VALUES (p_user_id, p_operation, p_key, p_request_hash, 'completed', coalesce(p_attempt, gen_random_uuid()), now(), now() + make_interval(hours => p_ttl_hours),
            200, 'transfer', v_id, v_transfer.status, '/api/transfers/' || v_id, now());
  END IF;
  RETURN NEXT v_transfer;
END;
$$;
`;

const TRANSFER_CREATE_BATCH = String.raw`CREATE OR REPLACE FUNCTION transfer_create_batch(p_items jsonb)
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
`;
