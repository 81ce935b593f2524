import { describe, expect, it } from 'vitest';
import { databaseKind, testKnex } from '../support/database';

describe('database back-end', () => {
  it('behaves like PostgreSQL on both back-ends: int8 as string, delete counts, multi-statement SQL', async () => {
    const knex = testKnex();
    const { rows } = await knex.raw('SELECT 9007199254740993::int8 AS big');
    expect(rows[0].big).toBe('9007199254740993');
    const deleted = await knex('users').where({ id: '00000000-0000-0000-0000-000000000000' }).del();
    expect(deleted).toBe(0);
    const multi = await knex.raw('SELECT 1 AS a; SELECT 2 AS b');
    expect(Array.isArray(multi)).toBe(true);
    expect(['postgres', 'embedded']).toContain(databaseKind());
  });
});
