import crypto from 'node:crypto';
import knexFactory from 'knex';
import type { TestProject } from 'vitest/node';
import { createKnex, migrateLatest } from '../../src/db/database';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    databaseKind: 'postgres' | 'embedded';
  }
}

/**
 * One fresh, migrated database per test run: a new database on the real server when
 * DATABASE_URL is set (so parallel runs never share rows), an in-memory PGlite otherwise.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // A database made ready by the caller (the mutation run, which runs the tests once per
  // mutant): used as it is, and left to the caller to remove.
  const prepared = process.env.TEST_DATABASE_URL;
  if (prepared) {
    project.provide('databaseUrl', prepared);
    project.provide('databaseKind', process.env.TEST_DATABASE_KIND === 'embedded' ? 'embedded' : 'postgres');
    return async () => undefined;
  }
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl) {
    const name = `test_run_${Date.now()}_${crypto.randomBytes(3).toString('hex')}`;
    const admin = knexFactory({ client: 'pg', connection: serverUrl, pool: { min: 0, max: 1 } });
    await admin.raw(`CREATE DATABASE ${name}`);
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    const knex = createKnex(url.toString(), 'postgres', 1);
    try {
      await migrateLatest(knex);
    } catch (error) {
      await knex.destroy();
      await admin.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.destroy();
      throw error;
    }
    await knex.destroy();
    project.provide('databaseUrl', url.toString());
    project.provide('databaseKind', 'postgres');
    return async () => {
      if (process.env.KEEP_TEST_DATABASE) return admin.destroy();
      await admin.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.destroy();
    };
  }
  const embedded = await startEmbeddedPostgres('memory://');
  try {
    const knex = createKnex(embedded.url, 'embedded');
    await migrateLatest(knex).finally(() => knex.destroy());
  } catch (error) {
    await embedded.stop();
    throw error;
  }
  project.provide('databaseUrl', embedded.url);
  project.provide('databaseKind', 'embedded');
  return () => embedded.stop();
}
