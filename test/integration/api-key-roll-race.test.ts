import { describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { ApiKeyService } from '../../src/modules/api-keys';
import { databaseKind, testKnex } from '../support/database';
import { createUser } from '../support/factories';
import { gate, untilWaitingForLock } from '../support/lock-wait';

/**
 * Two rolls of one key at once: the second waits for the first's lock. It must then see the
 * secret the first one made current (the lock is taken in a statement of its own, the key and
 * its current secret read after it), so its `api_key.rolled` event names the prefix it really
 * retires. Two connections: real PostgreSQL only.
 */
describe.runIf(databaseKind() === 'postgres')('two rolls of one API key at once', () => {
  const knex = testKnex();
  const keys = new ApiKeyService(knex, { pepper: 'roll-race-pepper-roll-race-pepper-0123456789', environment: 'test', clock: () => new Date() });

  it('the second names, as the prefix it retires, the one the first made current', { timeout: 30_000 }, async () => {
    const owner = await createUser();
    const [org] = (await knex('organizations').insert({ name: 'Roll Race SARL' }).returning('id')) as Array<{ id: string }>;
    const orgId = (org as { id: string }).id;
    const created = await keys.create(knex, orgId, owner.id, { name: 'raced', scopes: ['payments:read'] });

    const held = gate();
    const first = gate<string>();
    const firstRoll = withTransaction(knex, async (trx) => {
      const rolled = await keys.roll(trx, orgId, created.id, owner.id, 0);
      first.open(rolled.prefix);
      await held.opened;
    });
    const firstPrefix = await first.opened;
    const secondRoll = keys.roll(knex, orgId, created.id, owner.id, 0);
    await untilWaitingForLock(knex, '%from "api_keys"%for update%');
    held.open();
    await firstRoll;
    const second = await secondRoll;

    const rolled = (await knex('events').where({ subject_type: 'api_key', subject_id: created.id, type: 'api_key.rolled' }).orderBy('object_sequence').select('payload')) as Array<{ payload: { previous_prefix: string; prefix: string } }>;
    expect(rolled.map((event) => event.payload.prefix)).toEqual([firstPrefix, second.prefix]);
    expect(rolled.map((event) => event.payload.previous_prefix)).toEqual([created.prefix, firstPrefix]);
  });
});
