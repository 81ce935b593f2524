import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { isConnectionLoss } from './transaction';

/**
 * Names a hot-path query so that node-postgres prepares it once per connection: PostgreSQL
 * then skips parsing it, and planning it once a generic plan is chosen, on every later run
 * (knex hands the name to pg through `.options()`). pg refuses a name reused for another SQL
 * text, so a name must always go with one text: give each shape of a query its own name.
 */
export function prepared<Query extends { options(options: Readonly<Record<string, unknown>>): Query }>(name: string, query: Query): Query {
  return query.options({ name });
}

export interface QueryConfig {
  name?: string;
  text: string;
  values?: unknown[];
}

interface RawConnection {
  query(config: QueryConfig): Promise<{ rows: unknown[] }>;
}

interface ConnectionSource {
  acquireConnection(): Promise<RawConnection>;
  releaseConnection(connection: RawConnection): Promise<unknown>;
  emit(event: 'query', query: { sql: string; bindings: unknown[]; method: 'raw'; options: { name: string } }): unknown;
}

/**
 * Runs one named statement on the raw `pg` connection of `db` (the transaction's own
 * connection, or one borrowed from the pool and given back), with `$1`-style parameters and
 * none of knex's query building: the hot money paths are one such call each.
 */
export async function queryPrepared<Row>(db: Knex | Knex.Transaction, name: string, text: string, values: unknown[]): Promise<Row[]> {
  return (await queryRaw<Row>(db, { name, text, values })).rows;
}

/**
 * Runs one statement on the raw `pg` connection of `db` (the transaction's own connection, or
 * one borrowed from the pool and given back). Unnamed and without values it may hold several
 * statements (the job queue's schema changes).
 */
export async function queryRaw<Row>(db: Knex | Knex.Transaction, config: QueryConfig): Promise<{ rows: Row[] }> {
  const source = db.client as ConnectionSource;
  const connection = await source.acquireConnection();
  // Told as knex tells its own queries (`knex.on('query')`: logs, tests counting round trips).
  source.emit('query', { sql: config.text, bindings: config.values ?? [], method: 'raw', options: { name: config.name ?? '' } });
  try {
    return (await connection.query(config)) as { rows: Row[] };
  } catch (error) {
    // A connection that failed below SQL (terminated, reset) must not go back to the pool as if
    // it were healthy: knex learns it from an 'error' or 'end' event that may come after the
    // next caller took it. Marked as knex marks it, the pool destroys it on release.
    // So must a pooled connection left inside a transaction block that failed: a multi-statement
    // text with its own BEGIN (the job queue's schema install, raced by instances starting
    // together) aborts midway and would answer 25P02 to every later caller.
    const abortedOwnBlock = !db.isTransaction && (connection as { _txStatus?: string })._txStatus !== undefined && (connection as { _txStatus?: string })._txStatus !== 'I';
    if (isConnectionLoss(error) || abortedOwnBlock || (!db.isTransaction && /\bBEGIN\b/i.test(config.text))) (connection as { __knex__disposed?: unknown }).__knex__disposed = error;
    throw error;
  } finally {
    await source.releaseConnection(connection);
  }
}

/**
 * The embedded server keeps ONE session for every connection, so a statement prepared by
 * an earlier connection (or by another pool) is still there when a new connection, whose
 * pg client knows nothing of it, prepares the same name ("prepared statement ... already
 * exists"). Every connection therefore gives its statement names its own suffix: a new
 * connection never meets a name it did not prepare itself. Installed as the pool's
 * `afterCreate` hook on both back-ends (harmless on a real server, where sessions are per
 * connection).
 */
export function isolatePreparedStatements(connection: unknown): void {
  const client = connection as { query: (config: unknown, ...rest: unknown[]) => unknown };
  const suffix = `@${crypto.randomBytes(4).toString('hex')}`;
  const query = client.query.bind(client);
  client.query = (config: unknown, ...rest: unknown[]) => {
    const named = config !== null && typeof config === 'object' && typeof (config as QueryConfig).name === 'string';
    return query(named ? { ...(config as QueryConfig), name: (config as QueryConfig).name + suffix } : config, ...rest);
  };
}
