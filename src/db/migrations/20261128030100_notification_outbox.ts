import type { Knex } from 'knex';

/**
 * The sandbox notifier's outbox: every SMS and e-mail it kept instead of sending, written in
 * the transaction of the change that sends it, read newest first by recipient (the test helper
 * GET /test-helpers/outbox) and purged after OUTBOX_RETENTION_HOURS.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('notification_outbox', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('recipient').notNullable();
    t.text('channel').notNullable();
    t.text('template').notNullable();
    t.text('body').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`ALTER TABLE notification_outbox
    ADD CONSTRAINT notification_outbox_channel CHECK (channel IN ('sms', 'email')),
    ADD CONSTRAINT notification_outbox_body_length CHECK (char_length(body) <= 2000)`);
  await knex.raw('CREATE INDEX notification_outbox_recipient ON notification_outbox (recipient, created_at DESC, id DESC)');
  await knex.raw('CREATE INDEX notification_outbox_created_at ON notification_outbox (created_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('notification_outbox');
}
