CREATE OR REPLACE FUNCTION api_keys_revoke_for_lost_access(p_user uuid, p_organization uuid) RETURNS integer LANGUAGE plpgsql AS $$
-- Revokes the active keys held by p_user (their creator, or whoever took them over) in
-- p_organization (every organisation when NULL) that the holder may no longer create: the
-- holder is disabled or closed, or not an active owner or admin there. Each revocation records its
-- `api_key.revoked` event (reason creator_lost_access, the actor of app.actor_user_id when the
-- transaction set one) and a pending delivery per matching webhook endpoint, in the caller's
-- transaction. Returns how many keys were revoked.
DECLARE
  v_actor uuid := nullif(current_setting('app.actor_user_id', true), '')::uuid;
  v_key record;
  v_object jsonb;
  v_event uuid;
  v_count integer := 0;
BEGIN
  FOR v_key IN
    SELECT k.*, s.public_id, s.last4 FROM api_keys k
      JOIN api_key_secrets s ON s.api_key_id = k.id AND s.retires_at IS NULL
    WHERE coalesce(k.held_by, k.created_by) = p_user
      AND (p_organization IS NULL OR k.organization_id = p_organization)
      AND k.revoked_at IS NULL
      AND NOT EXISTS (
        SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id
        WHERE m.organization_id = k.organization_id AND m.user_id = p_user
          AND m.status = 'active' AND m.role IN ('owner', 'admin') AND u.status NOT IN ('disabled', 'closed'))
    ORDER BY k.id
    FOR UPDATE OF k
  LOOP
    UPDATE api_keys SET revoked_at = now(), revoked_by = v_actor, revoked_reason = 'creator_lost_access' WHERE id = v_key.id;
    v_object := jsonb_build_object(
      'id', v_key.id, 'name', v_key.name,
      'prefix', 'sk_' || v_key.environment || '_' || v_key.public_id, 'last4', v_key.last4,
      'scopes', to_jsonb(v_key.scopes), 'status', 'revoked',
      'created_at', to_char(v_key.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'expires_at', to_char(v_key.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'last_used_at', to_char(v_key.last_used_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'last_used_ip', v_key.last_used_ip,
      'created_by', v_key.created_by,
      'held_by', coalesce(v_key.held_by, v_key.created_by),
      'revoked_reason', 'creator_lost_access');
    WITH seq AS (
      INSERT INTO event_sequences (object_type, object_id, last) VALUES ('api_key', v_key.id, 1)
      ON CONFLICT (object_type, object_id) DO UPDATE SET last = event_sequences.last + 1
      RETURNING last)
    INSERT INTO events (subject_type, subject_id, type, actor_user_id, payload, occurred_at, organization_id, object_sequence, data)
    SELECT 'api_key', v_key.id, 'api_key.revoked', v_actor,
      jsonb_build_object('organization_id', v_key.organization_id, 'prefix', v_object->>'prefix', 'reason', 'creator_lost_access', 'holder_user_id', p_user),
      now(), v_key.organization_id, seq.last,
      jsonb_build_object('object', v_object, 'previous_status', CASE WHEN v_key.expires_at <= now() THEN 'expired' ELSE 'active' END)
    FROM seq
    RETURNING id INTO v_event;
    INSERT INTO webhook_deliveries (endpoint_id, event_id, organization_id, next_attempt_at)
      SELECT id, v_event, organization_id, now() FROM webhook_endpoints
      WHERE organization_id = v_key.organization_id AND status = 'enabled' AND events && ARRAY['api_key.revoked', '*', 'api_key.*']
        AND (object_types IS NULL OR 'api_key' = ANY(object_types));
    v_count := v_count + 1;
  END LOOP;
  RETURN v_count;
END $$;
