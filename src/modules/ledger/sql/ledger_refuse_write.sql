-- The guard of every direct write to postings, entries and balances (triggers created by the
-- posting-functions migration, with WHEN clauses on the `ledger.posting` flag that only
-- ledger_post raises): refused with SQLSTATE 42501 and the trigger's own message.
-- This file is what runs today: src/db/database-functions.ts applies it (CREATE OR REPLACE) and
-- test/integration/database-functions.test.ts fails when the database's function differs.
CREATE OR REPLACE FUNCTION ledger_refuse_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'insufficient_privilege';
END;
$$;
