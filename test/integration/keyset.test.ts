import type { Knex } from 'knex';
import { describe, expect, it } from 'vitest';
import { Keyset, toPage } from '../../src/db/keyset';
import { testKnex } from '../support/database';

const ITEMS = new Keyset({ table: 'keyset_items', alias: 'i', noun: 'an item of this owner' });

/** Runs `fn` on a scratch table that the rolled-back transaction takes away. */
async function withItems(fn: (trx: Knex.Transaction) => Promise<void>): Promise<void> {
  const rollback = new Error('rollback');
  await expect(
    testKnex().transaction(async (trx) => {
      await trx.raw('CREATE TEMP TABLE keyset_items (id text PRIMARY KEY, owner text NOT NULL, created_at timestamptz NOT NULL) ON COMMIT DROP');
      await fn(trx);
      throw rollback;
    }),
  ).rejects.toBe(rollback);
}

async function page(trx: Knex.Transaction, owner: string, limit: number, startingAfter?: string) {
  const rows = await ITEMS.rows<{ id: string }>(trx, trx('keyset_items as i').where('i.owner', owner).select('i.id'), { owner }, { limit, startingAfter });
  return toPage(rows, limit);
}

describe('Keyset', () => {
  it('pages newest first, ties on created_at broken by id, each row exactly once, in the scope only', async () => {
    await withItems(async (trx) => {
      // Microseconds apart and equal instants: a JS Date would lose the first, the id orders the second.
      await trx('keyset_items').insert([
        { id: 'a', owner: 'o', created_at: '2026-01-01T00:00:00.000001Z' },
        { id: 'b', owner: 'o', created_at: '2026-01-01T00:00:00.000002Z' },
        { id: 'c', owner: 'o', created_at: '2026-01-01T00:00:00.000002Z' },
        { id: 'd', owner: 'o', created_at: '2026-01-01T00:00:01Z' },
        { id: 'e', owner: 'o', created_at: '2026-01-01T00:00:02Z' },
        { id: 'x', owner: 'other', created_at: '2026-01-01T00:00:01.5Z' },
      ]);
      const first = await page(trx, 'o', 2);
      expect(first).toEqual({ object: 'list', data: [{ id: 'e' }, { id: 'd' }], has_more: true, next_cursor: 'd' });
      const second = await page(trx, 'o', 2, 'd');
      expect(second).toEqual({ object: 'list', data: [{ id: 'c' }, { id: 'b' }], has_more: true, next_cursor: 'b' });
      const last = await page(trx, 'o', 2, 'b');
      expect(last).toEqual({ object: 'list', data: [{ id: 'a' }], has_more: false, next_cursor: null });
      expect(await page(trx, 'o', 5)).toMatchObject({ data: [{ id: 'e' }, { id: 'd' }, { id: 'c' }, { id: 'b' }, { id: 'a' }], has_more: false, next_cursor: null });
    });
  });

  it('refuses a cursor of another scope or an unknown one with a 400 naming query.starting_after', async () => {
    await withItems(async (trx) => {
      await trx('keyset_items').insert([
        { id: 'mine', owner: 'o', created_at: '2026-01-01T00:00:00Z' },
        { id: 'theirs', owner: 'other', created_at: '2026-01-02T00:00:00Z' },
      ]);
      for (const cursor of ['theirs', 'unknown']) {
        await expect(page(trx, 'o', 10, cursor)).rejects.toMatchObject({
          code: 'ValidationError',
          details: [{ field: 'query.starting_after', message: expect.stringContaining('an item of this owner') }],
        });
      }
      expect(await ITEMS.cursorInScope(trx, { owner: 'o' }, 'mine')).toBe(true);
      expect(await ITEMS.cursorInScope(trx, { owner: 'o' }, 'theirs')).toBe(false);
    });
  });
});
