import fs from 'node:fs';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres';
import { isolatePreparedStatements } from './prepared';

export type DatabaseKind = 'postgres' | 'embedded';

export interface Database {
  knex: Knex;
  kind: DatabaseKind;
  /** The embedded server's process id (absent with DATABASE_URL). */
  embeddedPid?: number;
  close(): Promise<void>;
}

export const MIGRATIONS_DIRECTORY = path.join(__dirname, 'migrations');

interface MigrationModule {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/**
 * Lists timestamped migration files and loads them with import(), so the same migrations
 * run under tsx, the compiled build and Vitest's transformer (knex's own loader uses a
 * bare require that cannot read TypeScript inside Vitest).
 */
class DirectoryMigrationSource implements Knex.MigrationSource<string> {
  constructor(private readonly directory: string) {}

  async getMigrations(): Promise<string[]> {
    const files = await fs.promises.readdir(this.directory);
    return files.filter((file) => /^\d{14}_[\w-]+\.(ts|js)$/.test(file) && !file.endsWith('.d.ts')).sort();
  }

  getMigrationName(migration: string): string {
    return migration.replace(/\.(ts|js)$/, '');
  }

  async getMigration(migration: string): Promise<MigrationModule> {
    return (await import(path.join(this.directory, migration))) as MigrationModule;
  }
}

export function createKnex(url: string, kind: DatabaseKind, poolMax = 10): Knex {
  const statementEpoch = { generation: 0 };
  return knexFactory({
    client: 'pg',
    connection: { connectionString: url, application_name: 'fintech-platform-api' },
    // PGlite serves one connection at a time: a larger pool would interleave sessions.
    pool: {
      ...(kind === 'embedded' ? { min: 1, max: 1 } : { min: 0, max: poolMax }),
      afterCreate(connection: unknown, done: (error: Error | null, connection: unknown) => void) {
        isolatePreparedStatements(connection, { autoPrepare: kind === 'postgres', epoch: statementEpoch });
        done(null, connection);
      },
    },
    acquireConnectionTimeout: 10_000,
    migrations: { migrationSource: new DirectoryMigrationSource(MIGRATIONS_DIRECTORY), tableName: 'knex_migrations' },
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
  let knex: Knex;
  try {
    knex = createKnex(url, kind, options.poolMax);
  } catch (error) {
    await embedded?.stop();
    throw error;
  }
  return {
    knex,
    kind,
    embeddedPid: embedded?.pid,
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

/** One round trip to the database (the health probe). */
export async function ping(db: Knex | Knex.Transaction): Promise<void> {
  await db.raw('SELECT 1');
}
