-- The history of one object: its events, oldest first, as json [{type, actor_user_id,
-- occurred_at_ms}]. VOLATILE on purpose: in READ COMMITTED its query takes a snapshot of its
-- own when it runs. Called in the target list of a `SELECT ... FOR UPDATE` that had to wait for
-- another transaction's change of the row, it runs again on the new row version (PostgreSQL's
-- EvalPlanQual) and sees that transaction's events too; a plain subquery there would keep the
-- statement's snapshot from before the wait and miss them (the row new, its history old).
CREATE OR REPLACE FUNCTION events_history(p_subject_type text, p_subject_id uuid)
  RETURNS json LANGUAGE sql VOLATILE AS $$
  SELECT COALESCE(json_agg(json_build_object('type', h.type, 'actor_user_id', h.actor_user_id,
      'occurred_at_ms', floor(extract(epoch FROM h.occurred_at) * 1000)) ORDER BY h.sequence), '[]'::json)
    FROM events h WHERE h.subject_type = p_subject_type AND h.subject_id = p_subject_id
$$;
