import type { Knex } from 'knex';

/**
 * Every state change is an event (the outbox), and partners receive them through signed
 * webhooks.
 *
 * - `events` records every object type (the subject is the event's object), the
 *   organisation the object belongs to (null for a user's transfer, escrow or tontine), the
 *   object's own `object_sequence` (1, 2, 3... per object, from `event_sequences`, one row per
 *   object locked by the insert itself) and `data` (`{object, previous_status}`: the object as
 *   the API shows it when the change commits). `data` is NULL only while the transaction of
 *   the change runs (the snapshot is taken just before COMMIT); the guard lets that one fill
 *   happen and refuses every other change. DELETE is allowed only to the retention purge
 *   (`SET LOCAL app.purge_events = 'on'`).
 * - Transfers are created inside the database (transfer_create): a trigger on `transfers`
 *   records `transfer.created` (pending), `transfer.completed` and `transfer.failed` with the
 *   transfer as the API returns it (built in SQL: src/modules/transfers toView), in the same
 *   statement as the change, whichever path made it.
 * - `webhook_endpoints`: at most 16 per organisation (checked under the organisation's lock
 *   by the service); a rotated secret keeps the previous one until `previous_secret_expires_at`.
 * - `webhook_deliveries`: one per event and matching endpoint, inserted in the event's
 *   transaction; claimed by a worker (FOR UPDATE SKIP LOCKED) which pushes `next_attempt_at`
 *   forward as a lease before calling the receiver outside any transaction.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TRIGGER events_append_only ON events;
    ALTER TABLE events DROP CONSTRAINT events_subject_type;
    ALTER TABLE events
      ADD CONSTRAINT events_subject_type CHECK (subject_type IN ('escrow', 'tontine', 'payment', 'payment_link', 'invoice', 'quote', 'credit_note',
        'network_status', 'transfer', 'webhook_endpoint')),
      ADD COLUMN organization_id uuid,
      ADD COLUMN object_sequence integer,
      ADD COLUMN data jsonb;
    CREATE TABLE event_sequences (
      object_type text NOT NULL,
      object_id uuid NOT NULL,
      last integer NOT NULL,
      PRIMARY KEY (object_type, object_id)
    );
    UPDATE events e SET object_sequence = s.n
      FROM (SELECT sequence, row_number() OVER (PARTITION BY subject_type, subject_id ORDER BY sequence) AS n FROM events) s
      WHERE s.sequence = e.sequence;
    INSERT INTO event_sequences (object_type, object_id, last)
      SELECT subject_type, subject_id, max(object_sequence) FROM events GROUP BY subject_type, subject_id;
    ALTER TABLE events ALTER COLUMN object_sequence SET NOT NULL;
    CREATE UNIQUE INDEX events_object_sequence ON events (subject_type, subject_id, object_sequence);
    CREATE INDEX events_organization_index ON events (organization_id, sequence) WHERE organization_id IS NOT NULL;
    CREATE INDEX events_occurred_at_index ON events (occurred_at);

    CREATE FUNCTION events_guard() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' THEN
        IF current_setting('app.purge_events', true) = 'on' THEN RETURN OLD; END IF;
        RAISE EXCEPTION 'events are append-only (only the retention purge deletes them)' USING ERRCODE = '23001';
      END IF;
      IF OLD.data IS NULL AND NEW.data IS NOT NULL
         AND (NEW.sequence, NEW.id, NEW.subject_type, NEW.subject_id, NEW.type, NEW.actor_user_id, NEW.payload, NEW.occurred_at, NEW.organization_id, NEW.object_sequence)
             IS NOT DISTINCT FROM (OLD.sequence, OLD.id, OLD.subject_type, OLD.subject_id, OLD.type, OLD.actor_user_id, OLD.payload, OLD.occurred_at, OLD.organization_id, OLD.object_sequence) THEN
        RETURN NEW;
      END IF;
      RAISE EXCEPTION 'events are append-only' USING ERRCODE = '23001';
    END $$;
    CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
      FOR EACH ROW EXECUTE FUNCTION events_guard();

    CREATE FUNCTION record_event(p_type text, p_subject_type text, p_subject_id uuid, p_actor uuid, p_organization uuid, p_object jsonb, p_previous_status text)
      RETURNS void LANGUAGE sql AS $$
      WITH seq AS (
        INSERT INTO event_sequences (object_type, object_id, last) VALUES (p_subject_type, p_subject_id, 1)
        ON CONFLICT (object_type, object_id) DO UPDATE SET last = event_sequences.last + 1
        RETURNING last)
      INSERT INTO events (subject_type, subject_id, type, actor_user_id, payload, occurred_at, organization_id, object_sequence, data)
      SELECT p_subject_type, p_subject_id, p_type, p_actor, '{}', now(), p_organization, seq.last,
        jsonb_build_object('object', p_object, 'previous_status', p_previous_status)
      FROM seq
    $$;

    CREATE FUNCTION transfers_record_event() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      v_exponent integer;
      v_recipient jsonb;
      v_object jsonb;
      v_type text;
    BEGIN
      IF TG_OP = 'UPDATE' AND NEW.status IS NOT DISTINCT FROM OLD.status THEN RETURN NULL; END IF;
      v_type := CASE NEW.status WHEN 'pending' THEN 'transfer.created' WHEN 'completed' THEN 'transfer.completed' WHEN 'failed' THEN 'transfer.failed' ELSE NULL END;
      IF v_type IS NULL THEN RETURN NULL; END IF;
      SELECT exponent INTO v_exponent FROM currencies WHERE code = NEW.currency;
      v_recipient := jsonb_build_object('identifier', NEW.recipient_identifier, 'type', NEW.recipient_type);
      IF NEW.recipient_user_id IS NOT NULL THEN v_recipient := v_recipient || jsonb_build_object('user_id', NEW.recipient_user_id); END IF;
      v_object := jsonb_build_object(
        'id', NEW.id, 'status', NEW.status, 'rail', NEW.rail,
        'amount', round(NEW.amount_minor::numeric / (10::numeric ^ v_exponent), v_exponent),
        'amount_minor', NEW.amount_minor::text, 'currency', NEW.currency, 'recipient', v_recipient, 'note', NEW.note,
        'failure_code', NEW.failure_code, 'failure_reason', NEW.failure_reason,
        'created_at', to_char(NEW.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'updated_at', to_char(NEW.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
      PERFORM record_event(v_type, 'transfer', NEW.id, CASE WHEN TG_OP = 'INSERT' THEN NEW.sender_user_id END, NULL, v_object,
        CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END);
      RETURN NULL;
    END $$;
    CREATE TRIGGER transfers_record_event AFTER INSERT OR UPDATE OF status ON transfers
      FOR EACH ROW EXECUTE FUNCTION transfers_record_event();

    CREATE TABLE webhook_endpoints (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
      url text NOT NULL CHECK (length(url) <= 2048),
      description text CHECK (length(description) <= 500),
      events text[] NOT NULL CHECK (cardinality(events) BETWEEN 1 AND 64),
      status text NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
      disabled_reason text,
      secret text NOT NULL,
      previous_secret text,
      previous_secret_expires_at timestamptz,
      failing_since timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX webhook_endpoints_organization_index ON webhook_endpoints (organization_id, created_at, id);

    CREATE TABLE webhook_deliveries (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      endpoint_id uuid NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
      event_id uuid NOT NULL REFERENCES events(id) ON DELETE CASCADE,
      organization_id uuid NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed', 'exhausted')),
      attempt_count integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz,
      attempts jsonb NOT NULL DEFAULT '[]',
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (endpoint_id, event_id)
    );
    CREATE INDEX webhook_deliveries_due_index ON webhook_deliveries (next_attempt_at) WHERE status IN ('pending', 'failed') AND next_attempt_at IS NOT NULL;
    CREATE INDEX webhook_deliveries_endpoint_index ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE webhook_deliveries;
    DROP TABLE webhook_endpoints;
    DROP TRIGGER transfers_record_event ON transfers;
    DROP FUNCTION transfers_record_event();
    DROP FUNCTION record_event(text, text, uuid, uuid, uuid, jsonb, text);
    DROP TRIGGER events_append_only ON events;
    DROP FUNCTION events_guard();
    DROP TABLE event_sequences;
    SET LOCAL app.purge_events = 'on';
    DELETE FROM events WHERE subject_type NOT IN ('escrow', 'tontine');
    ALTER TABLE events DROP CONSTRAINT events_subject_type;
    ALTER TABLE events ADD CONSTRAINT events_subject_type CHECK (subject_type IN ('escrow', 'tontine'));
    ALTER TABLE events DROP COLUMN organization_id, DROP COLUMN object_sequence, DROP COLUMN data;
    CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
      FOR EACH ROW EXECUTE FUNCTION ledger_reject_change();
  `);
}
