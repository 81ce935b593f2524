import type { Knex } from 'knex';

/**
 * Who hands a pending bank or mobile-money transfer to its rail, and until when.
 * The instance that hands it over first sets `rail_lease_until` (claimed with FOR UPDATE SKIP
 * LOCKED by the resume sweep, or by a conditional update right after the transfer is created);
 * no other instance hands it over again before the lease ends, so several instances sweeping
 * at once never call a rail twice for one transfer. A transfer whose outcome has not come by
 * then is handed over again, by one instance.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE transfers ADD COLUMN rail_lease_until timestamptz');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE transfers DROP COLUMN rail_lease_until');
}
