import type { Knex } from 'knex';

/**
 * The sandbox outbox lists a recipient's messages newest first in the order they were kept:
 * `created_at` alone ties for messages kept in the same instant (the embedded database's clock
 * counts whole milliseconds), and a tie broken by a random id shuffled them. `position` is
 * the order of insertion; the list orders by it after `created_at`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE notification_outbox ADD COLUMN position bigint GENERATED ALWAYS AS IDENTITY;
    DROP INDEX notification_outbox_recipient;
    CREATE INDEX notification_outbox_recipient ON notification_outbox (recipient, created_at DESC, position DESC);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX notification_outbox_recipient;
    ALTER TABLE notification_outbox DROP COLUMN position;
    CREATE INDEX notification_outbox_recipient ON notification_outbox (recipient, created_at DESC, id DESC);
  `);
}
