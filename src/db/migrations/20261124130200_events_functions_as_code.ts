import type { Knex } from 'knex';
import { applyDatabaseFunctions } from '../database-functions';

/**
 * SQL as code for the functions of the events outbox: `events_guard` (events are
 * append-only but for the snapshot fill and the retention purge), `record_event` (one event
 * with its per-object sequence) and the transfers trigger `transfers_record_event` live in
 * their modules' sql/ folders, pinned here like those of 20261124000500. The texts are those
 * 20261124130100_webhooks created: applying them changes nothing in a database it migrated.
 */
export const FUNCTIONS = {
  events_guard: '5e876d9c9274808d',
  record_event: 'b3de087cfff17616',
  transfers_record_event: '652c2446a48c8afc',
};

export async function up(knex: Knex): Promise<void> {
  await applyDatabaseFunctions(knex, FUNCTIONS);
}

/** Nothing to undo: 20261124130100_webhooks' down drops the functions. */
export async function down(): Promise<void> {}
