import { describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { ApiKeyService } from '../../src/modules/api-keys';
import { databaseKind, testKnex } from '../support/database';
import { createUser } from '../support/factories';

/**
 * Two rolls of one key at once: the second waits for the first's lock. It must then see the
 * secret the first one made current (the lock is taken in a statement of its own, the key and
 * its current secret read after it), so its `api_key.rolled` event names the prefix it really
 * retires. Two connections: real PostgreSQL only.
 */
describe.runIf(databaseKind() === 'postgres')('two rolls of one API key at once', () => {
  const knex = testKnex();
  const keys = new ApiKeyService(knex, { pepper: 'roll-race-pepper-roll-race-pepper-0123456789', environment: 'test', clock: () => new Date() });

  const waitingForLock = async (): Promise<boolean> => {
    const { rows } = (await knex.raw(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%from "api_keys"%for update%'`,
    )) as { rows: Array<{ n: number }> };
    return (rows[0]?.n ?? 0) > 0;
  };

  it('the second names, as the prefix it retires, the one the first made current', { timeout: 30_000 }, async () => {
    const owner = await createUser();
    const [org] = (await knex('organizations').insert({ name: 'Roll Race SARL' }).returning('id')) as Array<{ id: string }>;
    const orgId = (org as { id: string }).id;
    const created = await keys.create(orgId, owner.id, { name: 'raced', scopes: ['payments:read'] });

    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let rolledFirst!: (prefix: string) => void;
    const first = new Promise<string>((resolve) => {
      rolledFirst = resolve;
    });
    const firstRoll = withTransaction(knex, async (trx) => {
      const rolled = await keys.roll(orgId, created.id, owner.id, 0, trx);
      rolledFirst(rolled.prefix);
      await held;
    });
    const firstPrefix = await first;
    const secondRoll = keys.roll(orgId, created.id, owner.id, 0);
    for (let tries = 0; !(await waitingForLock()); tries += 1) {
      expect(tries).toBeLessThan(200);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    release();
    await firstRoll;
    const second = await secondRoll;

    const rolled = (await knex('events').where({ subject_type: 'api_key', subject_id: created.id, type: 'api_key.rolled' }).orderBy('object_sequence').select('payload')) as Array<{ payload: { previous_prefix: string; prefix: string } }>;
    expect(rolled.map((event) => event.payload.prefix)).toEqual([firstPrefix, second.prefix]);
    expect(rolled.map((event) => event.payload.previous_prefix)).toEqual([created.prefix, firstPrefix]);
  });
});
