import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * A new transfer's first event no longer writes an event_sequences row (issue 21: the counter
 * upsert was a third of the event's cost, and the event a fifth of a transfer's in the
 * transfer_create A/B): `record_first_event` (src/modules/events/sql/record_first_event.sql)
 * writes sequence 1 alone, `record_event` (and EventRepository) start a missing counter after
 * the object's highest sequence, and the retention purge writes the counter of an object
 * whose only event it deletes, so a sequence never repeats. Objects migrated before have
 * their counters (20261124130100): nothing to backfill.
 */
export const FUNCTIONS = {
  record_event: '1c28e6d515386b40',
  record_first_event: 'f69fc1cbfbd5064c',
  transfers_record_event: '846634e50c2a3661',
};

export async function up(knex: Knex): Promise<void> {
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

/**
 * Nothing to undo, as for the other function pins (20261124130200): the functions keep the
 * texts of their files, which stay correct with or without this migration's record.
 */
export async function down(): Promise<void> {}
