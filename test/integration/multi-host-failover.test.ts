import crypto from 'node:crypto';
import net from 'node:net';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKnex } from '../../src/db/database';
import { CommitOutcomeUnknownError, isConnectionLoss, setLocal, withTransaction } from '../../src/db/transaction';
import { databaseKind, testDatabaseUrl, testKnex } from '../support/database';

/**
 * A TCP proxy in front of the test server that can be down (not listening), and that can send
 * every session it carries to another database by rewriting the startup message: with a
 * database whose default_transaction_read_only is on, it is a host that answers read-only, as a
 * standby does, on the same server.
 */
class ProxyHost {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  database: string | undefined;
  constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  async up(): Promise<void> {
    const server = net.createServer((client) => this.carry(client));
    await new Promise<void>((done, fail) => {
      server.once('error', fail);
      server.listen(this.port, '127.0.0.1', () => done());
    });
    this.server = server;
  }

  async down(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((done) => (this.server ? this.server.close(() => done()) : done()));
    this.server = undefined;
  }

  private carry(client: net.Socket): void {
    const upstream = net.connect(this.target.port, this.target.host);
    this.sockets.add(client).add(upstream);
    const forget = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on('error', forget).on('close', forget);
    upstream.on('error', forget).on('close', forget);
    let pending = Buffer.alloc(0);
    const first = (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      if (pending.length < 4 || pending.length < pending.readInt32BE(0)) return;
      client.off('data', first);
      const length = pending.readInt32BE(0);
      upstream.write(this.rewrite(pending.subarray(0, length)));
      upstream.write(pending.subarray(length));
      client.pipe(upstream);
      upstream.pipe(client);
    };
    client.on('data', first);
  }

  /** The startup message with its `database` parameter replaced (when a database is set). */
  private rewrite(message: Buffer): Buffer {
    if (this.database === undefined || message.readInt32BE(4) !== 196608) return message;
    const fields = message.subarray(8, message.length - 1).toString('utf8').split('\0').slice(0, -1);
    for (let i = 0; i < fields.length; i += 2) if (fields[i] === 'database') fields[i + 1] = this.database;
    const body = Buffer.from(`${fields.join('\0')}\0\0`, 'utf8');
    const head = Buffer.alloc(8);
    head.writeInt32BE(8 + body.length, 0);
    head.writeInt32BE(196608, 4);
    return Buffer.concat([head, body]);
  }
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', () => done()));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

describe.runIf(databaseKind() === 'postgres')('a multi-host DATABASE_URL follows the primary (real PostgreSQL)', () => {
  const admin = testKnex();
  // The file's database on the test server, and where that server listens (set before the first test).
  let url: URL;
  let database = '';
  let real = { host: '', port: 0 };
  const readOnlyDatabase = `ro_${crypto.randomBytes(4).toString('hex')}`;
  const table = `failover_${crypto.randomBytes(4).toString('hex')}`;
  const proxies: ProxyHost[] = [];
  const pools: Knex[] = [];
  /** A URL whose hosts are the given ports on loopback (the real server's user and database). */
  const multiHost = (ports: number[], attrs = 'read-write') =>
    `postgres://${url.username}${url.password ? `:${url.password}` : ''}@${ports.map((p) => `127.0.0.1:${p}`).join(',')}/${database}?target_session_attrs=${attrs}&connect_timeout=2`;
  const pool = (connection: string, max = 4) => {
    const knex = createKnex(connection, 'postgres', max);
    pools.push(knex);
    return knex;
  };
  const proxy = async (options: { readOnly?: boolean; up?: boolean } = {}) => {
    const host = new ProxyHost(await freePort(), real);
    if (options.readOnly) host.database = readOnlyDatabase;
    if (options.up !== false) await host.up();
    proxies.push(host);
    return host;
  };

  beforeAll(async () => {
    url = new URL(await testDatabaseUrl());
    database = url.pathname.slice(1);
    real = { host: url.hostname, port: Number(url.port || 5432) };
    await admin.raw(`CREATE DATABASE ${readOnlyDatabase}`);
    await admin.raw(`ALTER DATABASE ${readOnlyDatabase} SET default_transaction_read_only = on`);
    await admin.raw(`CREATE TABLE ${table} (id serial PRIMARY KEY, label text NOT NULL)`);
  });

  afterAll(async () => {
    for (const knex of pools) await knex.destroy();
    for (const host of proxies) await host.down();
    await admin.raw(`DROP TABLE IF EXISTS ${table}`);
    await admin.raw('DROP SCHEMA IF EXISTS failover_test CASCADE');
    await admin.raw(`DROP DATABASE IF EXISTS ${readOnlyDatabase} WITH (FORCE)`);
  });

  it('skips a read-only first host and writes through the next one', async () => {
    const standby = await proxy({ readOnly: true });
    const primary = await proxy();
    const knex = pool(multiHost([standby.port, primary.port]));
    await knex(table).insert({ label: 'through the primary' });
    expect((await knex.raw('SHOW transaction_read_only')).rows[0].transaction_read_only).toBe('off');
    expect((await knex.raw('SELECT current_database() AS db')).rows[0].db).toBe(database);
  });

  it('skips a host that refuses connections', async () => {
    const closed = await freePort();
    const primary = await proxy();
    const knex = pool(multiHost([closed, primary.port]));
    await knex(table).insert({ label: 'past a refused host' });
    expect(await knex(table).where({ label: 'past a refused host' }).count({ n: '*' })).toEqual([{ n: '1' }]);
  });

  it('with every host down a query fails as a lost connection (a 503), and succeeds once a host is back', async () => {
    const standby = await proxy({ readOnly: true });
    const primary = await proxy({ up: false });
    const knex = pool(multiHost([standby.port, primary.port]));
    const refused = await knex.raw('SELECT 1').catch((error: unknown) => error);
    expect((refused as { code?: string }).code).toBe('08001');
    expect(isConnectionLoss(refused)).toBe(true);
    await primary.up();
    expect((await knex.raw('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('after pg_terminate_backend of every connection the pool answers again on new connections, and the process lives on', async () => {
    const primary = await proxy();
    const knex = pool(multiHost([primary.port]));
    const pidsOf = async () => (await Promise.all(Array.from({ length: 4 }, () => knex.transaction(async (trx) => (await trx.raw('SELECT pg_backend_pid() AS pid, pg_sleep(0.05)')).rows[0].pid as number)))).sort();
    const before = await pidsOf();
    const terminated = (await admin.raw('SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE pid = ANY(?)', [before])).rows as unknown[];
    expect(terminated.length).toBeGreaterThan(0);
    // At most one query per dead connection may still meet it (its failure is a lost connection).
    let after: number[] | undefined;
    for (let attempt = 0; attempt < 5 && !after; attempt += 1) {
      after = await pidsOf().catch((error: unknown) => {
        expect(isConnectionLoss(error)).toBe(true);
        return undefined;
      });
    }
    expect(after).toBeDefined();
    expect(after?.some((pid) => before.includes(pid))).toBe(false);
  });

  it('a write refused as read-only on an open connection (a demoted primary) drops it: the next write goes through a new one', async () => {
    const primary = await proxy();
    const knex = pool(multiHost([primary.port]), 1);
    const pid = (await knex.raw('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
    await knex.raw('SET default_transaction_read_only = on');
    const refused = await knex(table).insert({ label: 'refused' }).catch((error: unknown) => error);
    expect((refused as { code?: string }).code).toBe('25006');
    await knex(table).insert({ label: 'after the demotion' });
    expect((await knex.raw('SELECT pg_backend_pid() AS pid')).rows[0].pid).not.toBe(pid);
  });

  describe('COMMIT', () => {
    const trigger = `${table}_at_commit`;
    // In a schema of its own: the application's schema holds only the functions of src/modules/*/sql.
    const triggerFunction = `failover_test.${trigger}`;
    beforeAll(async () => {
      await admin.raw('CREATE SCHEMA IF NOT EXISTS failover_test');
      // Runs during COMMIT (a deferred constraint trigger): stands for the wait on a synchronous standby.
      await admin.raw(`
        CREATE FUNCTION ${triggerFunction}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.label LIKE 'sync-cancel%' THEN
            RAISE WARNING 'canceling wait for synchronous replication due to user request'
              USING DETAIL = 'The transaction has already committed locally, but might not have been replicated to the standby.';
          ELSIF NEW.label LIKE 'timed%' THEN
            UPDATE ${table} SET label = label || ' at commit: ' || current_setting('statement_timeout') WHERE id = NEW.id;
          END IF;
          RETURN NULL;
        END $$`);
      await admin.raw(`CREATE CONSTRAINT TRIGGER ${trigger} AFTER INSERT ON ${table} DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ${triggerFunction}()`);
    });

    it('released with the synchronous-replication WARNING is an unknown outcome (08007): the caller is not told it succeeded', async () => {
      const knex = pool(url.toString(), 2);
      const label = `sync-cancel ${crypto.randomUUID()}`;
      const outcome = await withTransaction(knex, (trx) => trx(table).insert({ label })).catch((error: unknown) => error);
      expect(outcome).toBeInstanceOf(CommitOutcomeUnknownError);
      expect(isConnectionLoss(outcome)).toBe(true);
      expect((outcome as Error).message).toMatch(/already committed locally/);
      // Committed locally: what a retry with the same Idempotency-Key replays (or redoes, after a failover that lost it).
      expect(await admin(table).where({ label }).count({ n: '*' })).toEqual([{ n: '1' }]);
      const plain = `plain ${crypto.randomUUID()}`;
      await withTransaction(knex, (trx) => trx(table).insert({ label: plain }));
      expect(await admin(table).where({ label: plain }).count({ n: '*' })).toEqual([{ n: '1' }]);
    });

    it('runs without the statement timeout its transaction set (a COMMIT waiting for a standby is never cancelled by it)', async () => {
      const knex = pool(url.toString(), 1);
      const label = `timed ${crypto.randomUUID()}`;
      await withTransaction(knex, async (trx) => {
        await setLocal(trx, { statement_timeout: 100 });
        await trx(table).insert({ label });
      });
      expect(await admin(table).where('label', 'like', `${label}%`).pluck('label')).toEqual([`${label} at commit: 0`]);
      // The timeout still bounds the work before the COMMIT.
      const slow = await withTransaction(knex, async (trx) => {
        await setLocal(trx, { statement_timeout: 100 });
        await trx.raw('SELECT pg_sleep(0.3)');
      }).catch((error: unknown) => error);
      expect((slow as { code?: string }).code).toBe('57014');
    });
  });
});
