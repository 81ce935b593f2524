import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKnex } from '../../src/db/database';
import { AUTO_PREPARED_PER_CONNECTION } from '../../src/db/prepared';
import { withTransaction } from '../../src/db/transaction';
import { databaseKind, testDatabaseUrl, testKnex } from '../support/database';

/**
 * Every statement with parameters is prepared once per connection on a real server
 * (src/db/prepared.ts isolatePreparedStatements): PostgreSQL then parses it once, and plans it
 * once it settles on a generic plan. These tests read the session's pg_prepared_statements
 * through a pool of ONE connection, so every query below runs in that session.
 */
const autoNamed = async (knex: Knex): Promise<Array<{ name: string; statement: string }>> =>
  ((await knex.raw("SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'auto\\_%' ORDER BY prepare_time")) as { rows: Array<{ name: string; statement: string }> }).rows;

describe.runIf(databaseKind() === 'postgres')('statements prepared automatically (real PostgreSQL)', () => {
  const table = `auto_prepare_${crypto.randomBytes(4).toString('hex')}`;
  let knex: Knex;
  let other: Knex;

  beforeAll(async () => {
    other = testKnex();
    await other.schema.createTable(table, (t) => {
      t.integer('id').primary();
      t.text('label').notNullable();
    });
    await other(table).insert([
      { id: 1, label: 'one' },
      { id: 2, label: 'two' },
    ]);
  });

  afterAll(async () => {
    await knex?.destroy();
    await other.schema.dropTableIfExists(table);
  });

  const freshConnection = async () => {
    await knex?.destroy();
    knex = createKnex(await testDatabaseUrl(), 'postgres', 1);
  };

  it('prepares a statement with parameters once per connection, under a name made from its text', async () => {
    await freshConnection();
    expect(await knex(table).where({ id: 1 }).first('label')).toEqual({ label: 'one' });
    expect(await knex(table).where({ id: 2 }).first('label')).toEqual({ label: 'two' });
    const named = await autoNamed(knex);
    expect(named).toHaveLength(1);
    expect(named[0]?.statement).toBe(`select "label" from "${table}" where "id" = $1 limit $2`);
  });

  it('leaves a statement without parameters unnamed (BEGIN, COMMIT, DDL)', async () => {
    await freshConnection();
    await knex.raw(`SELECT count(*) FROM ${table}`);
    await withTransaction(knex, async (trx) => trx.raw('SELECT 1'));
    expect(await autoNamed(knex)).toEqual([]);
  });

  it('prepares at most AUTO_PREPARED_PER_CONNECTION texts per connection; later texts still run, unnamed', async () => {
    await freshConnection();
    const texts = AUTO_PREPARED_PER_CONNECTION + 5;
    for (let n = 0; n < texts; n += 1) {
      const { rows } = (await knex.raw(`SELECT ?::int + ${n} AS sum`, [1])) as { rows: Array<{ sum: number }> };
      expect(rows[0]?.sum).toBe(1 + n);
    }
    expect(await autoNamed(knex)).toHaveLength(AUTO_PREPARED_PER_CONNECTION);
  });

  it('prepares a SELECT * again, without failing the query, when a migration added a column under it', async () => {
    await freshConnection();
    expect(await knex(table).where({ id: 1 }).first()).toEqual({ id: 1, label: 'one' });
    await other.schema.alterTable(table, (t) => t.text('note'));
    // PostgreSQL refuses the old statement (0A000 "cached plan must not change result type").
    expect(await knex(table).where({ id: 1 }).first()).toEqual({ id: 1, label: 'one', note: null });
    expect(await knex(table).where({ id: 2 }).first()).toEqual({ id: 2, label: 'two', note: null });
    await other.schema.alterTable(table, (t) => t.dropColumn('note'));
  });

  it('inside a transaction, withTransaction runs the work again on the re-prepared statement', async () => {
    await freshConnection();
    expect(await withTransaction(knex, (trx) => trx(table).where({ id: 2 }).first())).toEqual({ id: 2, label: 'two' });
    await other.schema.alterTable(table, (t) => t.text('note'));
    let attempts = 0;
    const row = await withTransaction(knex, async (trx) => {
      attempts += 1;
      return trx(table).where({ id: 2 }).first();
    });
    expect(row).toEqual({ id: 2, label: 'two', note: null });
    expect(attempts).toBe(2);
    await other.schema.alterTable(table, (t) => t.dropColumn('note'));
  });

  it('after one connection met a stale statement, the pool\'s other connections prepare theirs again too (a retry never meets the next stale one)', async () => {
    await knex?.destroy();
    knex = createKnex(await testDatabaseUrl(), 'postgres', 2);
    type Raw = { query(config: { text: string; values: unknown[] }): Promise<{ rows: unknown[] }> };
    const client = knex.client as { acquireConnection(): Promise<Raw>; releaseConnection(connection: Raw): Promise<unknown> };
    const [first, second] = [await client.acquireConnection(), await client.acquireConnection()];
    const text = `select * from "${table}" where "id" = $1`;
    try {
      for (const connection of [first, second]) expect((await connection.query({ text, values: [1] })).rows).toEqual([{ id: 1, label: 'one' }]);
      await other.schema.alterTable(table, (t) => t.text('note'));
      expect((await first.query({ text, values: [1] })).rows).toEqual([{ id: 1, label: 'one', note: null }]);
      // Inside a transaction block the statement could not be re-sent: it must not be stale.
      await second.query({ text: 'BEGIN', values: [] });
      expect((await second.query({ text, values: [2] })).rows).toEqual([{ id: 2, label: 'two', note: null }]);
      await second.query({ text: 'COMMIT', values: [] });
    } finally {
      await client.releaseConnection(first);
      await client.releaseConnection(second);
      await other.schema.alterTable(table, (t) => t.dropColumn('note'));
    }
  });
});

describe.runIf(databaseKind() === 'embedded')('statements on the embedded back-end', () => {
  it('are not prepared automatically: its one session would keep every connection\'s statements', async () => {
    const knex = testKnex();
    await knex('currencies').where({ code: 'XOF' }).first('code');
    await knex('currencies').where({ code: 'EUR' }).first('code');
    expect(await autoNamed(knex)).toEqual([]);
  });
});
