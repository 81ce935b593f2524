import type { Knex } from 'knex';
import { inject } from 'vitest';
import { createKnex } from '../../src/db/database';

let shared: Knex | undefined;

/**
 * The run's database, one pool per worker process. On the embedded back-end all files
 * share one worker (see vitest.config.ts), hence one connection. Never destroyed by a
 * test file: the worker's exit closes it.
 */
export function testKnex(): Knex {
  if (!shared) {
    const kind = inject('databaseKind');
    shared = createKnex(inject('databaseUrl'), kind, 20);
  }
  return shared;
}

export function databaseKind(): 'postgres' | 'embedded' {
  return inject('databaseKind');
}
