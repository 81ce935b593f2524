import type { Knex } from 'knex';

/**
 * The double-entry ledger: currencies, ledger accounts, postings and their entries.
 *
 * What the database itself guarantees (the service checks the same rules first, with clear
 * errors; these are the last line of defence):
 * - every posting's entries sum to zero per currency and a posting has at least two entries
 *   (DEFERRABLE INITIALLY DEFERRED constraint triggers, checked at COMMIT);
 * - entries and postings are never updated, deleted or truncated (triggers);
 * - an entry's currency is its account's currency (composite foreign key);
 * - an account's balance is the sum of its entries: inserting an entry moves the balance
 *   (trigger) and nothing else may change `balance_minor`;
 * - only external clearing accounts may go negative (CHECK constraints).
 */

const CURRENCIES: Array<[code: string, exponent: number, name: string]> = [
  ['XOF', 0, 'West African CFA franc'],
  ['XAF', 0, 'Central African CFA franc'],
  ['EUR', 2, 'Euro'],
  ['USD', 2, 'United States dollar'],
  ['GBP', 2, 'Pound sterling'],
  ['NGN', 2, 'Nigerian naira'],
  ['GHS', 2, 'Ghanaian cedi'],
  ['KES', 2, 'Kenyan shilling'],
  ['MAD', 2, 'Moroccan dirham'],
  ['ZAR', 2, 'South African rand'],
  ['EGP', 2, 'Egyptian pound'],
  ['TZS', 2, 'Tanzanian shilling'],
  ['UGX', 0, 'Ugandan shilling'],
  ['RWF', 0, 'Rwandan franc'],
  ['GNF', 0, 'Guinean franc'],
  ['CHF', 2, 'Swiss franc'],
  ['CAD', 2, 'Canadian dollar'],
  ['CNY', 2, 'Chinese yuan'],
  ['INR', 2, 'Indian rupee'],
  ['JPY', 0, 'Japanese yen'],
  ['KWD', 3, 'Kuwaiti dinar'],
  ['BHD', 3, 'Bahraini dinar'],
  ['TND', 3, 'Tunisian dinar'],
];

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('currencies', (t) => {
    t.specificType('code', 'char(3)').primary();
    t.smallint('exponent').notNullable();
    t.text('name').notNullable();
  });
  await knex.raw(`ALTER TABLE currencies
    ADD CONSTRAINT currencies_code_format CHECK (code ~ '^[A-Z]{3}$'),
    ADD CONSTRAINT currencies_exponent_range CHECK (exponent BETWEEN 0 AND 4)`);
  await knex('currencies').insert(CURRENCIES.map(([code, exponent, name]) => ({ code, exponent, name })));

  await knex.schema.createTable('ledger_accounts', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('owner_type').notNullable();
    t.uuid('owner_id'); // users.id or organizations.id; NULL for platform accounts
    t.specificType('currency', 'char(3)').notNullable().references('currencies.code');
    t.text('kind').notNullable();
    // Tells apart several accounts of one owner, kind and currency (an org's foreign-currency
    // account id, an escrow id, a tontine id, a rail name); NULL for the one-per-currency kinds.
    t.text('external_ref');
    t.boolean('allow_negative').notNullable().defaultTo(false);
    t.bigInteger('balance_minor').notNullable().defaultTo(0);
    t.text('status').notNullable().defaultTo('active');
    t.timestamps(true, true);
    t.unique(['id', 'currency'], { indexName: 'ledger_accounts_id_currency_unique' });
    t.index(['owner_type', 'owner_id'], 'ledger_accounts_owner_index');
  });
  await knex.raw(`ALTER TABLE ledger_accounts
    ADD CONSTRAINT ledger_accounts_owner_type CHECK (owner_type IN ('user', 'organization', 'platform')),
    ADD CONSTRAINT ledger_accounts_owner_present CHECK ((owner_type = 'platform') = (owner_id IS NULL)),
    ADD CONSTRAINT ledger_accounts_kind CHECK (kind IN ('wallet', 'org_account', 'escrow_holding', 'tontine_pool', 'external_clearing', 'rail_transit', 'fees')),
    ADD CONSTRAINT ledger_accounts_only_clearing_negative CHECK (NOT allow_negative OR kind = 'external_clearing'),
    ADD CONSTRAINT ledger_accounts_non_negative CHECK (allow_negative OR balance_minor >= 0),
    ADD CONSTRAINT ledger_accounts_status CHECK (status IN ('active', 'frozen')),
    ADD CONSTRAINT ledger_accounts_external_ref_length CHECK (external_ref IS NULL OR length(external_ref) BETWEEN 1 AND 200),
    ADD CONSTRAINT ledger_accounts_identity UNIQUE NULLS NOT DISTINCT (owner_type, owner_id, currency, kind, external_ref)`);

  await knex.schema.createTable('postings', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('kind').notNullable();
    t.text('reference').notNullable();
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.uuid('reverses_posting_id').references('postings.id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // One posting per (kind, reference): posting the same business event twice fails.
    t.unique(['kind', 'reference'], { indexName: 'postings_kind_reference_unique' });
  });
  await knex.raw(`ALTER TABLE postings
    ADD CONSTRAINT postings_kind_format CHECK (kind ~ '^[a-z][a-z0-9_.]{0,63}$'),
    ADD CONSTRAINT postings_reference_length CHECK (length(reference) BETWEEN 1 AND 200)`);

  await knex.schema.createTable('entries', (t) => {
    t.bigIncrements('id').primary();
    t.uuid('posting_id').notNullable().references('postings.id');
    t.uuid('account_id').notNullable();
    t.specificType('currency', 'char(3)').notNullable();
    t.bigInteger('amount_minor').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.foreign(['account_id', 'currency'], 'entries_account_currency_fk').references(['id', 'currency']).inTable('ledger_accounts');
    t.index(['posting_id'], 'entries_posting_index');
    t.index(['account_id', 'created_at', 'id'], 'entries_statement_index');
  });
  await knex.raw(`ALTER TABLE entries ADD CONSTRAINT entries_amount_non_zero CHECK (amount_minor <> 0)`);

  // Entries and postings are append-only.
  await knex.raw(`
    CREATE FUNCTION ledger_reject_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'ledger % are append-only: % is not allowed (post a correcting posting instead)', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
    END;
    $$;
    CREATE TRIGGER entries_append_only BEFORE UPDATE OR DELETE ON entries
      FOR EACH ROW EXECUTE FUNCTION ledger_reject_change();
    CREATE TRIGGER entries_no_truncate BEFORE TRUNCATE ON entries
      FOR EACH STATEMENT EXECUTE FUNCTION ledger_reject_change();
    CREATE TRIGGER postings_append_only BEFORE UPDATE OR DELETE ON postings
      FOR EACH ROW EXECUTE FUNCTION ledger_reject_change();
    CREATE TRIGGER postings_no_truncate BEFORE TRUNCATE ON postings
      FOR EACH STATEMENT EXECUTE FUNCTION ledger_reject_change();
  `);

  // An entry moves its account's balance; nothing else may.
  await knex.raw(`
    CREATE FUNCTION ledger_apply_entry() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE ledger_accounts SET balance_minor = balance_minor + NEW.amount_minor, updated_at = now()
        WHERE id = NEW.account_id;
      RETURN NULL;
    END;
    $$;
    CREATE TRIGGER entries_apply_balance AFTER INSERT ON entries
      FOR EACH ROW EXECUTE FUNCTION ledger_apply_entry();

    CREATE FUNCTION ledger_guard_balance() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' AND NEW.balance_minor <> 0 THEN
        RAISE EXCEPTION 'a ledger account starts with a zero balance; fund it with a posting'
          USING ERRCODE = 'integrity_constraint_violation';
      END IF;
      IF TG_OP = 'UPDATE' AND NEW.balance_minor IS DISTINCT FROM OLD.balance_minor AND pg_trigger_depth() < 2 THEN
        RAISE EXCEPTION 'ledger_accounts.balance_minor changes only through ledger entries'
          USING ERRCODE = 'integrity_constraint_violation';
      END IF;
      IF TG_OP = 'UPDATE' AND (NEW.currency <> OLD.currency OR NEW.allow_negative <> OLD.allow_negative) THEN
        RAISE EXCEPTION 'the currency and allow_negative of a ledger account never change'
          USING ERRCODE = 'integrity_constraint_violation';
      END IF;
      RETURN NEW;
    END;
    $$;
    CREATE TRIGGER ledger_accounts_guard_balance BEFORE INSERT OR UPDATE ON ledger_accounts
      FOR EACH ROW EXECUTE FUNCTION ledger_guard_balance();
  `);

  // Every posting balances to zero per currency, checked when the transaction commits.
  await knex.raw(`
    CREATE FUNCTION ledger_check_posting_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      unbalanced record;
      entry_count integer;
    BEGIN
      SELECT currency, sum(amount_minor) AS total INTO unbalanced
        FROM entries WHERE posting_id = NEW.posting_id
        GROUP BY currency HAVING sum(amount_minor) <> 0 LIMIT 1;
      IF FOUND THEN
        RAISE EXCEPTION 'posting % does not balance: its % entries sum to %', NEW.posting_id, unbalanced.currency, unbalanced.total
          USING ERRCODE = 'integrity_constraint_violation';
      END IF;
      RETURN NULL;
    END;
    $$;
    CREATE CONSTRAINT TRIGGER entries_posting_balanced AFTER INSERT ON entries
      DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW EXECUTE FUNCTION ledger_check_posting_balanced();

    CREATE FUNCTION ledger_check_posting_has_entries() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF (SELECT count(*) FROM entries WHERE posting_id = NEW.id) < 2 THEN
        RAISE EXCEPTION 'posting % has fewer than two entries', NEW.id
          USING ERRCODE = 'integrity_constraint_violation';
      END IF;
      RETURN NULL;
    END;
    $$;
    CREATE CONSTRAINT TRIGGER postings_have_entries AFTER INSERT ON postings
      DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW EXECUTE FUNCTION ledger_check_posting_has_entries();
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE entries');
  await knex.raw('DROP TABLE postings');
  await knex.raw('DROP TABLE ledger_accounts');
  await knex.raw('DROP TABLE currencies');
  await knex.raw(`DROP FUNCTION ledger_check_posting_has_entries();
    DROP FUNCTION ledger_check_posting_balanced();
    DROP FUNCTION ledger_guard_balance();
    DROP FUNCTION ledger_apply_entry();
    DROP FUNCTION ledger_reject_change()`);
}
