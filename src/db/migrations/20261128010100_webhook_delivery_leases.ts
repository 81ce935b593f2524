import type { Knex } from 'knex';

/**
 * Deliveries under way: `leased_until` is set when a worker claims a delivery for an attempt and
 * cleared when the attempt is recorded, so the dispatcher counts the attempts under way per
 * endpoint and per organisation across instances (their bounds), and a worker that dies
 * mid-attempt stops counting once the lease ends. The second index finds an endpoint's next due
 * deliveries in order.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE webhook_deliveries ADD COLUMN leased_until timestamptz;
    CREATE INDEX webhook_deliveries_leased_index ON webhook_deliveries (endpoint_id) INCLUDE (organization_id, leased_until) WHERE leased_until IS NOT NULL;
    CREATE INDEX webhook_deliveries_endpoint_due_index ON webhook_deliveries (endpoint_id, next_attempt_at, id) WHERE status IN ('pending', 'failed') AND next_attempt_at IS NOT NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX webhook_deliveries_endpoint_due_index;
    DROP INDEX webhook_deliveries_leased_index;
    ALTER TABLE webhook_deliveries DROP COLUMN leased_until;
  `);
}
