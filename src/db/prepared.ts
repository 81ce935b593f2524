import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { isConnectionLoss, isStalePreparedStatement } from './transaction';

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

/** The most statements one connection prepares on its own (each holds a plan in its backend). */
export const AUTO_PREPARED_PER_CONNECTION = 200;

/** Shared by the connections of one pool: its generation is part of every statement name. */
export interface PreparedStatementEpoch {
  generation: number;
}

type QueryCallback = (error: Error | null, result?: unknown) => void;
interface PgClient {
  query: (config: unknown, ...rest: unknown[]) => unknown;
  /** node-postgres' transaction status of the session: 'I' idle (not in a transaction block). */
  _txStatus?: string;
}

/** A plain query config (text, values, name); a pg Submittable (a cursor, a stream) passes through untouched. */
function isParameterizedConfig(config: unknown): config is QueryConfig {
  return config !== null && typeof config === 'object' && typeof (config as QueryConfig).text === 'string' && typeof (config as { submit?: unknown }).submit !== 'function';
}

/**
 * Gives every statement sent on `connection` a name, so node-postgres prepares it once per
 * connection and PostgreSQL skips parsing it (and planning it, once it settles on a generic
 * plan) on every later run. The log of an escrow request showed parse and bind (planning) at
 * 60 to 90 % of the server time of its small SELECTs and UPDATEs.
 *
 * - Statements named by their caller (`prepared()`) keep their name. Every name gets the
 *   connection's own suffix: the embedded server keeps ONE session for every connection, so a
 *   statement prepared by an earlier connection is still there when a new connection, whose pg
 *   client knows nothing of it, prepares the same name ("prepared statement ... already exists").
 * - With `autoPrepare`, a statement with parameters and no name is named after its text (its
 *   SHA-256), up to AUTO_PREPARED_PER_CONNECTION texts per connection; later texts run unnamed.
 *   Only on a real server: the embedded one's single session would keep every connection's.
 * - A stale statement (isStalePreparedStatement) makes every connection of the pool (those
 *   sharing `epoch`) prepare its statements again under new names: a migration that changed a
 *   table changed it for all of them, and a retry must not meet the next stale connection.
 *   Outside a transaction block the statement is re-sent at once; inside one the error stands,
 *   and withTransaction retries the transaction (it is retryable).
 *
 * Installed as the pool's `afterCreate` hook.
 */
export function isolatePreparedStatements(connection: unknown, options: { autoPrepare?: boolean; epoch?: PreparedStatementEpoch } = {}): void {
  const client = connection as PgClient;
  const suffix = `@${crypto.randomBytes(4).toString('hex')}`;
  const query = client.query.bind(client);
  const autoNames = new Map<string, string>();
  const epoch = options.epoch ?? { generation: 0 };
  const nameOf = (config: QueryConfig): string | undefined => {
    let name = config.name;
    if (name === undefined && options.autoPrepare && config.values?.length) {
      name = autoNames.get(config.text);
      if (name === undefined && autoNames.size < AUTO_PREPARED_PER_CONNECTION) {
        name = `auto_${crypto.createHash('sha256').update(config.text).digest('base64url').slice(0, 22)}`;
        autoNames.set(config.text, name);
      }
    }
    return name === undefined ? undefined : `${name}${suffix}.${epoch.generation}`;
  };
  const send = (config: unknown, rest: unknown[]) => query(isParameterizedConfig(config) ? { ...config, name: nameOf(config) } : config, ...rest);
  client.query = (config: unknown, ...rest: unknown[]) => {
    if (!isParameterizedConfig(config)) return send(config, rest);
    const idle = client._txStatus === undefined || client._txStatus === 'I';
    // A stale statement: prepare everything again under new names; re-send it where nothing else is undone.
    const retried = (error: unknown): boolean => {
      if (!isStalePreparedStatement(error)) return false;
      epoch.generation += 1;
      return idle;
    };
    const callback = rest[0];
    if (typeof callback === 'function') {
      return send(config, [(error: Error | null, result?: unknown) => (error && retried(error) ? send(config, [callback]) : (callback as QueryCallback)(error, result))]);
    }
    return (send(config, rest) as Promise<unknown>).catch((error: unknown) => {
      if (retried(error)) return send(config, rest);
      throw error;
    });
  };
}
