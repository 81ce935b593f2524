CREATE OR REPLACE FUNCTION api_keys_creator_lost_access() RETURNS trigger LANGUAGE plpgsql AS $$
-- After a change of users or memberships, whoever stopped being allowed to create keys
-- somewhere (disabled or closed; a membership suspended, removed or demoted below admin) loses
-- the keys they hold there, in the same transaction: operator SQL and the API alike.
BEGIN
  IF TG_TABLE_NAME = 'users' THEN
    IF NEW.status IN ('disabled', 'closed') AND OLD.status NOT IN ('disabled', 'closed') THEN
      PERFORM api_keys_revoke_for_lost_access(NEW.id, NULL);
    END IF;
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM api_keys_revoke_for_lost_access(OLD.user_id, OLD.organization_id);
  ELSIF OLD.status = 'active' AND OLD.role IN ('owner', 'admin')
        AND NOT (NEW.status = 'active' AND NEW.role IN ('owner', 'admin') AND NEW.user_id = OLD.user_id AND NEW.organization_id = OLD.organization_id) THEN
    PERFORM api_keys_revoke_for_lost_access(OLD.user_id, OLD.organization_id);
  END IF;
  RETURN NULL;
END $$;
