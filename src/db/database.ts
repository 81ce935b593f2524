import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres';

export type DatabaseKind = 'postgres' | 'embedded';

export interface Database {
  knex: Knex;
  kind: DatabaseKind;
  close(): Promise<void>;
}

export const MIGRATIONS_DIRECTORY = path.join(__dirname, 'migrations');

export function createKnex(url: string, kind: DatabaseKind, poolMax = 10): Knex {
  return knexFactory({
    client: 'pg',
    connection: { connectionString: url, application_name: 'fintech-platform-api' },
    // PGlite serves one connection at a time: a larger pool would interleave sessions.
    pool: kind === 'embedded' ? { min: 1, max: 1 } : { min: 0, max: poolMax },
    acquireConnectionTimeout: 10_000,
    migrations: { directory: MIGRATIONS_DIRECTORY, loadExtensions: ['.ts', '.js'], tableName: 'knex_migrations' },
  });
}

/** Opens the configured PostgreSQL, or starts the embedded one when no URL is given. */
export async function openDatabase(options: { databaseUrl?: string; embeddedDataDir: string; poolMax?: number }): Promise<Database> {
  let embedded: EmbeddedPostgres | undefined;
  let url = options.databaseUrl;
  const kind: DatabaseKind = url ? 'postgres' : 'embedded';
  if (!url) {
    embedded = await startEmbeddedPostgres(options.embeddedDataDir);
    url = embedded.url;
  }
  const knex = createKnex(url, kind, options.poolMax);
  return {
    knex,
    kind,
    async close() {
      await knex.destroy();
      await embedded?.stop();
    },
  };
}

export async function migrateLatest(knex: Knex): Promise<string[]> {
  const [, applied] = (await knex.migrate.latest()) as [number, string[]];
  return applied;
}
