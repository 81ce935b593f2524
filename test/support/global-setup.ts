import crypto from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import type { TestProject } from 'vitest/node';
import { createKnex, migrateLatest } from '../../src/db/database';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseKind: 'postgres' | 'embedded';
    /** The embedded servers' URLs, one per worker; empty on real PostgreSQL, where each file has a database of its own. */
    embeddedDatabaseUrls: string[];
    /** On real PostgreSQL: the server (DATABASE_URL) on which the files' databases are created and dropped. */
    databaseServerUrl: string;
    /** On real PostgreSQL: the migrated database every file's database is cloned from (never connected to). */
    databaseTemplate: string;
  }
}

/**
 * On real PostgreSQL (DATABASE_URL): one migrated template database per run, which each test
 * file clones into a database of its own (test/support/database.ts), so parallel files and
 * parallel runs never share rows. Otherwise an in-memory PGlite, migrated once, that the
 * files share one after another (it serves one connection).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // A migrated template made ready by the caller (the mutation run, which runs the tests once
  // per mutant): used as it is, and left to the caller to remove with the files' leftovers.
  const prepared = process.env.TEST_DATABASE_URL;
  if (prepared) {
    if (process.env.TEST_DATABASE_KIND === 'embedded') {
      provideEmbedded(project, [prepared]);
      return async () => undefined;
    }
    const url = new URL(prepared);
    const template = url.pathname.slice(1);
    url.pathname = '/postgres';
    providePostgres(project, process.env.DATABASE_URL ?? url.toString(), template);
    return async () => undefined;
  }
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl) {
    const template = `test_run_${Date.now()}_${crypto.randomBytes(3).toString('hex')}`;
    const admin = knexFactory({ client: 'pg', connection: serverUrl, pool: { min: 0, max: 1 } });
    await admin.raw(`CREATE DATABASE ${template}`);
    const url = new URL(serverUrl);
    url.pathname = `/${template}`;
    const knex = createKnex(url.toString(), 'postgres', 1);
    try {
      await migrateLatest(knex);
    } catch (error) {
      await knex.destroy();
      await dropDatabases(admin, template);
      await admin.destroy();
      throw error;
    }
    // No session may stay on the template: PostgreSQL refuses to clone a database in use.
    await knex.destroy();
    providePostgres(project, serverUrl, template);
    return async () => {
      if (!process.env.KEEP_TEST_DATABASE) await dropDatabases(admin, template);
      await admin.destroy();
    };
  }
  // One embedded server per worker (each in a process of its own), so the files of one worker
  // run one after another on a server no other worker touches.
  const servers = await Promise.allSettled(Array.from({ length: EMBEDDED_WORKERS }, () => startMigratedEmbedded()));
  const started = servers.flatMap((server) => (server.status === 'fulfilled' ? [server.value] : []));
  const stopAll = async () => {
    await Promise.all(started.map((server) => server.stop()));
  };
  const failed = servers.find((server) => server.status === 'rejected');
  if (failed) {
    await stopAll();
    throw failed.reason;
  }
  provideEmbedded(
    project,
    started.map((server) => server.url),
  );
  return stopAll;
}

/** One server per worker of the run (maxWorkers in vitest.config.mts). */
export const EMBEDDED_WORKERS = 2;

async function startMigratedEmbedded(): Promise<{ url: string; stop(): Promise<void> }> {
  const embedded = await startEmbeddedPostgres('memory://');
  try {
    const knex = createKnex(embedded.url, 'embedded');
    await migrateLatest(knex).finally(() => knex.destroy());
  } catch (error) {
    await embedded.stop();
    throw error;
  }
  return embedded;
}

function providePostgres(project: TestProject, serverUrl: string, template: string): void {
  project.provide('databaseKind', 'postgres');
  project.provide('embeddedDatabaseUrls', []);
  project.provide('databaseServerUrl', serverUrl);
  project.provide('databaseTemplate', template);
}

function provideEmbedded(project: TestProject, urls: string[]): void {
  project.provide('databaseKind', 'embedded');
  project.provide('embeddedDatabaseUrls', urls);
  project.provide('databaseServerUrl', '');
  project.provide('databaseTemplate', '');
}

/**
 * Drops the template and every database cloned from it that is still there (a file's
 * database is dropped after the file; one is left only by a worker that died).
 */
export async function dropDatabases(admin: Knex, template: string): Promise<void> {
  const { rows } = (await admin.raw(`SELECT datname FROM pg_database WHERE datname = ? OR starts_with(datname, ?)`, [template, `${template}_`])) as {
    rows: Array<{ datname: string }>;
  };
  // The clones first: a template cannot be dropped while a clone is being made from it.
  for (const { datname } of rows.sort((a, b) => b.datname.length - a.datname.length)) await admin.raw(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
}
