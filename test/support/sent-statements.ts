import type { Knex } from 'knex';

/** What `work` sent through `knex`, statement by statement (its SQL), with its result. */
export async function statementsSent<T>(knex: Knex, work: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  const statements: string[] = [];
  const listener = (query: { sql: string }) => statements.push(query.sql);
  knex.on('query', listener);
  try {
    return { result: await work(), statements };
  } finally {
    knex.removeListener('query', listener);
  }
}
