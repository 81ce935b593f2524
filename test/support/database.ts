import crypto from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import type { Client } from 'pg';
import { inject } from 'vitest';
import { createKnex } from '../../src/db/database';

/** Where the pool lives: on the worker's global object, so a module reloaded in the same worker (mutation testing, vi.resetModules) reuses it. */
const POOL = Symbol.for('fintech-platform-api.test-pool');
/** The file's own database on the real server, on the worker's global object for the same reason. */
const FILE_DATABASE = Symbol.for('fintech-platform-api.test-file-database');

interface FileDatabase {
  template: string;
  name: string;
  url: string;
  /** Set once creation has started: resolves when the clone exists. */
  created?: Promise<void>;
}
type Holder = { [POOL]?: { url: string; knex: Knex }; [FILE_DATABASE]?: FileDatabase };

/**
 * On real PostgreSQL each test file has a database of its own, a clone of the run's migrated
 * template (test/support/global-setup.ts), so no test sees another file's rows: it is
 * created at the file's first connection (files that never touch the database cost nothing)
 * and dropped after the file (dropTestDatabase, from test/support/setup-env.ts). Its name is
 * the template's plus a random suffix, so the run's teardown finds and drops any a crashed
 * worker left behind. Nothing ever connects to the template: PostgreSQL clones only a database
 * with no open session.
 */
function fileDatabase(): FileDatabase {
  const holder = globalThis as Holder;
  const template = inject('databaseTemplate');
  if (holder[FILE_DATABASE]?.template !== template) {
    const name = `${template}_${crypto.randomBytes(4).toString('hex')}`;
    const url = new URL(inject('databaseServerUrl'));
    url.pathname = `/${name}`;
    holder[FILE_DATABASE] = { template, name, url: url.toString() };
  }
  return holder[FILE_DATABASE];
}

function admin(): Knex {
  return knexFactory({ client: 'pg', connection: inject('databaseServerUrl'), pool: { min: 0, max: 1 } });
}

/** Creates the file's database (once) from the template; resolves when it can be connected to. */
export function ensureTestDatabase(): Promise<void> {
  if (databaseKind() !== 'postgres') return Promise.resolve();
  const database = fileDatabase();
  database.created ??= (async () => {
    const server = admin();
    try {
      await server.raw(`CREATE DATABASE ${database.name} TEMPLATE ${database.template}`);
    } finally {
      await server.destroy();
    }
  })();
  return database.created;
}

/**
 * Removes the file's database if the file created one (FORCE: connections still open, a
 * test's own pools included, are cut), after closing the file's pool.
 */
export async function dropTestDatabase(): Promise<void> {
  const holder = globalThis as Holder;
  const database = holder[FILE_DATABASE];
  if (databaseKind() !== 'postgres' || !database) return;
  const pool = holder[POOL];
  holder[POOL] = undefined;
  holder[FILE_DATABASE] = undefined;
  await pool?.knex.destroy();
  if (!database.created) return;
  await database.created.catch(() => undefined);
  const server = admin();
  try {
    await server.raw(`DROP DATABASE IF EXISTS ${database.name} WITH (FORCE)`);
  } finally {
    await server.destroy();
  }
}

/**
 * The URL of the file's database (created first, on real PostgreSQL), for a test that opens
 * connections of its own; the embedded server's on the embedded back-end.
 */
export async function testDatabaseUrl(): Promise<string> {
  if (databaseKind() !== 'postgres') return embeddedDatabaseUrl();
  await ensureTestDatabase();
  return fileDatabase().url;
}

/**
 * The file's database, one pool per worker. A test file never destroys it. On the embedded
 * back-end all files share one worker and one database unless the run isolates them (vitest
 * --isolate, the mutation run): see embeddedTestKnex.
 */
export function testKnex(): Knex {
  const holder = globalThis as Holder;
  const kind = databaseKind();
  const url = kind === 'postgres' ? fileDatabase().url : embeddedDatabaseUrl();
  if (holder[POOL]?.url !== url) {
    holder[POOL] = { url, knex: kind === 'embedded' ? embeddedTestKnex(url) : createdOnFirstConnection(createKnex(url, kind, 20)) };
  }
  return holder[POOL].knex;
}

/**
 * A pool on the file's database whose connections wait for the database to be cloned. The wait
 * comes before the pool's own acquire (and its timeout): a clone slowed by a busy server delays
 * the file's first query, never fails it.
 */
function createdOnFirstConnection(knex: Knex): Knex {
  const client = knex.client as { acquireConnection(): Promise<unknown> };
  const acquire = client.acquireConnection.bind(client);
  client.acquireConnection = async () => {
    await ensureTestDatabase();
    return acquire();
  };
  return knex;
}

/** This worker's embedded server: each worker of the embedded run has one of its own (test/support/global-setup.ts). */
function embeddedDatabaseUrl(): string {
  const urls = inject('embeddedDatabaseUrls');
  const worker = Number(process.env.VITEST_POOL_ID ?? '1');
  return urls[(Math.max(1, worker) - 1) % urls.length] as string;
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
 * Another database on the real server, cloned from the run's template (tests of several
 * instances that share a database with nothing else, or of a second database): its URL and
 * `drop`, which removes it (FORCE: open pools are cut).
 */
export async function createOwnDatabase(prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  // Named after the template, like the files' databases: the run's teardown drops a leftover.
  const name = `${inject('databaseTemplate')}_${prefix}_${crypto.randomBytes(3).toString('hex')}`;
  const server = admin();
  await server.raw(`CREATE DATABASE ${name} TEMPLATE ${inject('databaseTemplate')}`);
  const url = new URL(inject('databaseServerUrl'));
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      await server.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await server.destroy();
    },
  };
}
