import fs from 'node:fs';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres';
import { isolatePreparedStatements } from './prepared';
import { HostSelector, needsHostSelection, parseDatabaseUrl, SESSION_STATE_SQL, type HostAddress, type SessionState } from './multi-host';
import { CommitOutcomeUnknownError, isConnectionLoss, isSynchronousReplicationCancel } from './transaction';

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

/** What the pool knows of a connection: the generation of the host selection it was made in. */
interface PooledConnection {
  __generation?: number;
  __knex__disposed?: unknown;
}

type PgConnection = pg.Client & PooledConnection;
type QueryCallback = (error: Error | null, result?: unknown) => void;

/** The default wait for one host of a multi-host URL to accept a connection (libpq's connect_timeout). */
export const DEFAULT_CONNECT_TIMEOUT_SECONDS = 5;

/** Closes a connection without waiting on a host that no longer answers. */
function closeQuietly(connection: pg.Client): Promise<void> {
  return Promise.race([connection.end().catch(() => undefined), new Promise<void>((done) => setTimeout(done, 1_000).unref())]);
}

/** Opens one connection to one host, with the handlers knex gives its own (an idle connection's error never ends the process). */
async function openConnection(settings: pg.ClientConfig): Promise<PgConnection> {
  const connection = new pg.Client(settings) as PgConnection;
  connection.on('error', (error) => {
    connection.__knex__disposed = error;
  });
  connection.on('end', () => {
    connection.__knex__disposed ??= 'Connection ended unexpectedly';
  });
  try {
    await connection.connect();
  } catch (error) {
    await closeQuietly(connection);
    throw error;
  }
  return connection;
}

/**
 * Watches one pooled connection:
 * - a COMMIT that PostgreSQL released with the synchronous-replication WARNING ("canceling
 *   wait for synchronous replication ... already committed locally") fails with
 *   CommitOutcomeUnknownError (08007), so the request answers 503 and its Idempotency-Key
 *   settles the outcome on retry instead of acknowledging what a failover may lose;
 * - an error that shows a failover (isConnectionLoss) disposes of the connection and is told to
 *   `onLoss` (the host selection starts again);
 * - an error event (an idle connection whose server went away) is handled, never thrown.
 */
export function watchConnection(connection: unknown, onLoss: (error: unknown) => void = () => undefined): void {
  const client = connection as PgConnection;
  let commit: { warning?: string } | undefined;
  client.on('notice', (notice: { message?: string; detail?: string }) => {
    if (commit && isSynchronousReplicationCancel(notice.message ?? '')) commit.warning = [notice.message, notice.detail].filter(Boolean).join(' ');
  });
  client.on('error', (error) => onLoss(error));
  const query = client.query.bind(client) as (config: unknown, ...rest: unknown[]) => unknown;
  const settle = (isCommit: boolean, error: Error | null): Error | null => {
    let outcome = error;
    if (isCommit) {
      const warning = commit?.warning;
      commit = undefined;
      if (!outcome && warning !== undefined) outcome = new CommitOutcomeUnknownError(warning);
    }
    if (outcome && isConnectionLoss(outcome)) {
      client.__knex__disposed ??= outcome;
      onLoss(outcome);
    }
    return outcome;
  };
  (client as { query: unknown }).query = (config: unknown, ...rest: unknown[]) => {
    const text = typeof config === 'string' ? config : (config as { text?: unknown; submit?: unknown } | null)?.text;
    if (typeof text !== 'string' || typeof (config as { submit?: unknown }).submit === 'function') return query(config, ...rest);
    const isCommit = /^\s*COMMIT\b/i.test(text);
    if (isCommit) commit = {};
    const callback = rest.find((item) => typeof item === 'function') as QueryCallback | undefined;
    if (callback) {
      const args = rest.map((item) => (item === callback ? (error: Error | null, result?: unknown) => callback(settle(isCommit, error), result) : item));
      return query(config, ...args);
    }
    return (query(config, ...rest) as Promise<unknown>).then(
      (result) => {
        const error = settle(isCommit, null);
        if (error) throw error;
        return result;
      },
      (error: Error) => {
        throw settle(isCommit, error);
      },
    );
  };
}

interface KnexPgClientClass {
  new (config: Knex.Config): object;
  prototype: object;
}

/**
 * knex's PostgreSQL client with a connection factory that follows the primary: each new
 * connection goes through `selector` (the hosts in order, the first with the wanted session
 * attributes), and carries its generation so the pool drops it after a failover.
 */
function hostSelectingClient(selector: HostSelector<PgConnection>): KnexPgClientClass {
  // knex exports no type for its dialect classes.
  const Base = require('knex/lib/dialects/postgres/index.js') as KnexPgClientClass;
  return class HostSelectingPgClient extends Base {
    async _acquireOnlyConnection(): Promise<PgConnection> {
      const { connection, generation } = await selector.connect();
      connection.__generation = generation;
      return connection;
    }
  };
}

export interface KnexOptions {
  /** Told when a failover error starts a new host selection (a multi-host or target_session_attrs URL). */
  onFailover?: (host: HostAddress | undefined, error: unknown) => void;
}

export function createKnex(url: string, kind: DatabaseKind, poolMax = 10, options: KnexOptions = {}): Knex {
  const statementEpoch = { generation: 0 };
  const address = kind === 'postgres' ? parseDatabaseUrl(url) : undefined;
  const applicationName = 'fintech-platform-api';
  let selector: HostSelector<PgConnection> | undefined;
  if (address && needsHostSelection(address)) {
    const connectionTimeoutMillis = (address.connectTimeoutSeconds ?? DEFAULT_CONNECT_TIMEOUT_SECONDS) * 1000;
    selector = new HostSelector<PgConnection>({
      address,
      open: (hostUrl) => openConnection({ connectionString: hostUrl, application_name: applicationName, connectionTimeoutMillis }),
      async inspect(connection) {
        const row = (await connection.query<{ in_recovery: boolean; read_only: boolean }>(SESSION_STATE_SQL)).rows[0];
        return { inRecovery: row?.in_recovery === true, readOnly: row?.read_only === true } satisfies SessionState;
      },
      close: closeQuietly,
      onFailover: options.onFailover,
    });
  }
  const current = selector;
  return knexFactory({
    client: current ? (hostSelectingClient(current) as unknown as typeof Knex.Client) : 'pg',
    connection: current ? { application_name: applicationName } : { connectionString: url, application_name: applicationName },
    // PGlite serves one connection at a time: a larger pool would interleave sessions.
    pool: {
      ...(kind === 'embedded' ? { min: 1, max: 1 } : { min: 0, max: poolMax }),
      afterCreate(connection: unknown, done: (error: Error | null, connection: unknown) => void) {
        if (kind === 'postgres') {
          const generation = (connection as PooledConnection).__generation ?? 0;
          watchConnection(connection, (error) => current?.failover(generation, error));
        }
        isolatePreparedStatements(connection, { autoPrepare: kind === 'postgres', epoch: statementEpoch });
        done(null, connection);
      },
      // A connection made before the latest failover may be to the old primary: never reused.
      ...(current ? { validate: (connection: unknown) => current.isCurrent((connection as PooledConnection).__generation ?? -1) } : {}),
    },
    acquireConnectionTimeout: 10_000,
    migrations: { migrationSource: new DirectoryMigrationSource(MIGRATIONS_DIRECTORY), tableName: 'knex_migrations' },
  });
}

/** Opens the configured PostgreSQL, or starts the embedded one when no URL is given. */
export async function openDatabase(options: { databaseUrl?: string; embeddedDataDir: string; poolMax?: number } & KnexOptions): Promise<Database> {
  let embedded: EmbeddedPostgres | undefined;
  let url = options.databaseUrl;
  const kind: DatabaseKind = url ? 'postgres' : 'embedded';
  if (!url) {
    embedded = await startEmbeddedPostgres(options.embeddedDataDir);
    url = embedded.url;
  }
  let knex: Knex;
  try {
    knex = createKnex(url, kind, options.poolMax, { onFailover: options.onFailover });
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
