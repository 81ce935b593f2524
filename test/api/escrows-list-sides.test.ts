import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { openEscrow } from '../support/escrows';
import { createCaller, type TestCaller } from '../support/factories';

const knex = testKnex();
let app: App;
/** Every escrow of this file is created at one of a few instants, so ties on created_at are common. */
let clock = new Date();

beforeAll(async () => {
  app = await buildTestApp({ now: () => clock });
});

async function open(buyer: TestCaller, seller: TestCaller, amount: number): Promise<string> {
  return (await openEscrow(app, buyer, seller, { amount, description: 'Sides' })).id;
}

async function pages(by: TestCaller, query: string, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (;;) {
    const res = await request(app)
      .get(`/api/escrows?limit=${limit}${query}${cursor ? `&starting_after=${cursor}` : ''}`)
      .set(by.auth)
      .expect(200);
    ids.push(...res.body.data.data.map((escrow: { id: string }) => escrow.id));
    expect(res.body.data.has_more).toBe(res.body.data.next_cursor !== null);
    if (!res.body.data.has_more) return ids;
    cursor = res.body.data.next_cursor as string;
  }
}

describe('GET /escrows as buyer and seller at once', () => {
  it('merges both sides newest first (ties by id), each escrow once, across every page size', async () => {
    const me = await createCaller(app);
    const others = await Promise.all([createCaller(app), createCaller(app), createCaller(app)]);
    for (let i = 0; i < 11; i += 1) {
      if (i % 3 === 0) clock = new Date(clock.getTime() + 1000);
      const other = others[i % others.length] as TestCaller;
      // Alternate sides, two in a row now and then, so pages cut through runs of each side.
      if (i % 5 < 2) await open(me, other, 100 + i);
      else await open(other, me, 100 + i);
    }
    const expected = (
      (await knex('escrows')
        .where('buyer_user_id', me.user.id)
        .orWhere('seller_user_id', me.user.id)
        .orderBy([
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
        .select('id')) as Array<{ id: string }>
    ).map((row) => row.id);
    expect(expected).toHaveLength(11);
    for (const limit of [1, 2, 3, 5, 11, 20]) expect(await pages(me, '', limit)).toEqual(expected);

    const awaiting = await pages(me, '&status=awaiting_funding', 4);
    expect(awaiting).toEqual(expected);
    const asSeller = (await knex('escrows').where('seller_user_id', me.user.id).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).select('id')).map((row: { id: string }) => row.id);
    expect(await pages(me, '&role=seller', 2)).toEqual(asSeller);
    expect(asSeller.length).toBeGreaterThan(0);
    expect(asSeller.length).toBeLessThan(11);
  });
});
