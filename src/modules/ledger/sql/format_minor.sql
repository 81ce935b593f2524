-- Minor units as the exact decimal string of the contract's amounts, the SQL twin of
-- formatMinor (src/modules/ledger/money.ts): 1050 at exponent 2 is '10.50', -5 is '-0.05',
-- 7 at exponent 0 is '7'. Multiplying by a decimal literal of scale `p_exponent` is exact and
-- gives the result exactly that scale (a division would round past 16 significant digits).
-- Exponents are 0 to 6 (the currencies table's CHECK; 6 for the stablecoins); any other gives NULL.
-- Not STRICT, so PostgreSQL inlines it into the query that calls it (no function call per
-- amount, and the invoices list renders every amount of its JSON with it); NULL in, NULL out.
-- This file is what runs today: src/db/database-functions.ts applies it (CREATE OR REPLACE) and
-- test/integration/database-functions.test.ts fails when the database's function differs.
CREATE OR REPLACE FUNCTION format_minor(p_minor bigint, p_exponent smallint) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (p_minor::numeric * CASE p_exponent WHEN 0 THEN 1 WHEN 1 THEN 0.1 WHEN 2 THEN 0.01 WHEN 3 THEN 0.001 WHEN 4 THEN 0.0001 WHEN 5 THEN 0.00001 WHEN 6 THEN 0.000001 END)::text
$$;
