import type { Knex } from 'knex';

/**
 * Transfers: person to person (settled at once), bank and mobile money (pending until the
 * rail settles them). The money of a transfer moves only through its ledger postings:
 * `posting_id` (sender wallet -> recipient wallet, or -> the rail's transit account) and,
 * for rails, `settlement_posting_id` (transit -> external clearing when completed, or
 * transit -> sender wallet, a reversal, when failed).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('transfers', (t) => {
    t.uuid('id').primary();
    t.uuid('sender_user_id').notNullable().references('users.id');
    t.text('rail').notNullable();
    t.text('status').notNullable();
    t.specificType('currency', 'char(3)').notNullable().references('currencies.code');
    t.bigInteger('amount_minor').notNullable();
    t.text('recipient_type').notNullable();
    t.text('recipient_identifier').notNullable();
    t.uuid('recipient_user_id').references('users.id');
    t.text('note');
    t.uuid('posting_id').notNullable().references('postings.id');
    t.uuid('settlement_posting_id').references('postings.id');
    t.text('rail_reference');
    t.timestamp('submitted_at', { useTz: true });
    t.text('failure_code');
    t.text('failure_reason');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('settled_at', { useTz: true });
    t.unique(['posting_id'], { indexName: 'transfers_posting_unique' });
  });
  await knex.raw(`ALTER TABLE transfers
    ADD CONSTRAINT transfers_rail CHECK (rail IN ('p2p', 'bank', 'mobile_money')),
    ADD CONSTRAINT transfers_status CHECK (status IN ('pending', 'completed', 'failed', 'reversed')),
    ADD CONSTRAINT transfers_amount_positive CHECK (amount_minor > 0),
    ADD CONSTRAINT transfers_recipient_type CHECK (recipient_type IN ('user', 'iban', 'msisdn')),
    ADD CONSTRAINT transfers_recipient_identifier_length CHECK (length(recipient_identifier) BETWEEN 1 AND 320),
    ADD CONSTRAINT transfers_note_length CHECK (note IS NULL OR length(note) <= 280),
    ADD CONSTRAINT transfers_p2p_between_users CHECK ((rail = 'p2p') = (recipient_type = 'user' AND recipient_user_id IS NOT NULL)),
    ADD CONSTRAINT transfers_p2p_is_immediate CHECK (rail <> 'p2p' OR status IN ('completed', 'reversed')),
    ADD CONSTRAINT transfers_not_to_self CHECK (recipient_user_id IS NULL OR recipient_user_id <> sender_user_id),
    ADD CONSTRAINT transfers_settled_has_posting CHECK (rail = 'p2p' OR status = 'pending' OR (settlement_posting_id IS NOT NULL AND settled_at IS NOT NULL)),
    ADD CONSTRAINT transfers_failure_explained CHECK ((status = 'failed') = (failure_code IS NOT NULL))`);
  await knex.raw(`CREATE INDEX transfers_sender_listing ON transfers (sender_user_id, created_at DESC, id DESC)`);
  await knex.raw(`CREATE INDEX transfers_recipient_index ON transfers (recipient_user_id) WHERE recipient_user_id IS NOT NULL`);
  await knex.raw(`CREATE INDEX transfers_pending ON transfers (created_at) WHERE status = 'pending'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('transfers');
}
