import type { Knex } from 'knex';

/**
 * The event table: one row for every state change of an escrow or a tontine, written in the
 * same transaction as the change. It is the history shown to users today and the source of
 * partner webhooks later. Append-only: a trigger refuses UPDATE and DELETE.
 *
 * `actor_user_id` is NULL when the platform acted (the automatic release, late marking).
 * `sequence` orders the events of one subject (and all events, for a future webhook feed).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('events', (t) => {
    t.bigIncrements('sequence').primary();
    t.uuid('id').notNullable().unique().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('subject_type').notNullable();
    t.uuid('subject_id').notNullable();
    t.text('type').notNullable();
    t.uuid('actor_user_id').references('users.id');
    t.jsonb('payload').notNullable().defaultTo('{}');
    t.timestamp('occurred_at', { useTz: true }).notNullable();
  });
  await knex.raw(`ALTER TABLE events
    ADD CONSTRAINT events_subject_type CHECK (subject_type IN ('escrow', 'tontine')),
    ADD CONSTRAINT events_type_format CHECK (type ~ '^[a-z][a-z_]*\\.[a-z][a-z_.]*$' AND length(type) <= 64);
    CREATE INDEX events_subject_index ON events (subject_type, subject_id, sequence);
    CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
      FOR EACH ROW EXECUTE FUNCTION ledger_reject_change();`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('events');
}
