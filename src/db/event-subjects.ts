import type { Knex } from 'knex';

/**
 * Rewrites the events table's check of subject types from the types it allows today (read from
 * the constraint), so a migration adds or removes its own types without restating the others.
 * NOT VALID: the rows already there were checked by the constraint they were written under.
 */
export async function setEventSubjects(knex: Knex, change: (current: string[]) => string[]): Promise<void> {
  const result = (await knex.raw(`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'events_subject_type' AND conrelid = 'events'::regclass`)) as {
    rows: Array<{ def: string }>;
  };
  const types = change([...(result.rows[0]?.def ?? '').matchAll(/'([a-z_]+)'/g)].map((match) => match[1] as string));
  await knex.raw('ALTER TABLE events DROP CONSTRAINT IF EXISTS events_subject_type');
  await knex.raw(`ALTER TABLE events ADD CONSTRAINT events_subject_type CHECK (subject_type IN (${types.map((type) => `'${type}'`).join(', ')})) NOT VALID`);
}
