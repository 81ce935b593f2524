import crypto from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import type { Client } from 'pg';
import { inject } from 'vitest';
import { createKnex, migrateLatest } from '../../src/db/database';

/** Where the pool lives: on the worker's global object, so a module reloaded in the same worker (mutation testing, vi.resetModules) reuses it. */
const POOL = Symbol.for('fintech-platform-api.test-pool');
type PoolHolder = { [POOL]?: { url: string; knex: Knex } };

/**
 * The run's database, one pool per worker. Never destroyed by a test file: the worker's exit
 * closes it. On the embedded back-end all files share one worker unless the run isolates
 * them (vitest --isolate, the mutation run): see embeddedTestKnex.
 */
export function testKnex(): Knex {
  const holder = globalThis as PoolHolder;
  const url = inject('databaseUrl');
  if (holder[POOL]?.url !== url) {
    const kind = inject('databaseKind');
    holder[POOL] = { url, knex: kind === 'embedded' ? embeddedTestKnex(url) : createKnex(url, kind, 20) };
  }
  return holder[POOL].knex;
}

export function databaseKind(): 'postgres' | 'embedded' {
  return inject('databaseKind');
}

/**
 * The embedded server keeps ONE session for every connection it ever accepts: named prepared
 * statements, SET values and advisory locks of an earlier pool (an earlier worker, an earlier
 * isolated file) are still there when the next pool connects, and preparing the same name
 * again fails with "prepared statement ... already exists". So every new connection starts by
 * discarding that session state. The server also takes one connection at a time: a pool that
 * connects while the previous worker's connection is still closing is refused, so connecting
 * is retried (until the acquire timeout) instead of failing the first query.
 */
function embeddedTestKnex(url: string): Knex {
  // The application's settings for this back-end; this instance never connects.
  const template = createKnex(url, 'embedded');
  const config = template.client.config as Knex.Config;
  void template.destroy();
  return knexFactory({
    ...config,
    pool: {
      ...(config.pool as Knex.PoolConfig),
      propagateCreateError: false,
      afterCreate(connection: Client, done: (error: Error | null, connection: Client) => void) {
        connection.query('DISCARD ALL').then(
          () => done(null, connection),
          (error: Error) => done(error, connection),
        );
      },
    },
  });
}

/**
 * A migrated database of its own on the real server (tests of several instances that must not
 * see other files' rows): its URL and `drop`, which removes it (FORCE: open pools are cut).
 */
export async function createOwnDatabase(prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const serverUrl = inject('databaseUrl');
  const name = `${prefix}_${Date.now()}_${crypto.randomBytes(3).toString('hex')}`;
  const admin = knexFactory({ client: 'pg', connection: serverUrl, pool: { min: 0, max: 1 } });
  await admin.raw(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const migrator = createKnex(url.toString(), 'postgres', 1);
  await migrateLatest(migrator).finally(() => migrator.destroy());
  return {
    url: url.toString(),
    async drop() {
      await admin.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.destroy();
    },
  };
}
