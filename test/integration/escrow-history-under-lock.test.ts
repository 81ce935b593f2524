import { describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { EscrowService } from '../../src/modules/escrows';
import { databaseKind, testKnex } from '../support/database';
import { escrowThroughService } from '../support/escrows';
import type { TestUser } from '../support/factories';
import { gate, untilWaitingForLock } from '../support/lock-wait';

/**
 * An escrow action reads the escrow's history in the statement that locks it (one round
 * trip). When that statement has to wait for another action on the same escrow, it must
 * see the history as that action left it: PostgreSQL re-reads the row after the wait, and the
 * history comes from `events_history`, whose query takes its own snapshot then. (A subquery
 * would keep the snapshot from before the wait: the row new, its history old, and the event
 * written next carrying a history without the action it had waited for.) Two connections: real
 * PostgreSQL only.
 */
describe.runIf(databaseKind() === 'postgres')('an escrow action that waited for the lock', () => {
  const knex = testKnex();
  const createCaller = (user: TestUser) => ({ userId: user.id, sessionId: '', isAdmin: false });
  const escrows = new EscrowService({ knex, feeBps: 100, clock: () => new Date() });

  it('sees the events of the action it waited for, in its answer and in the event it writes', { timeout: 30_000 }, async () => {
    const { escrow, buyer, seller } = await escrowThroughService(escrows, { status: 'funded', buyerBalance: 100_000n, input: { description: 'Raced' } });

    // The seller delivers and holds the lock; the buyer's dispute waits for it.
    const held = gate();
    const delivered = gate();
    const deliver = withTransaction(knex, async (trx) => {
      await escrows.act(trx, createCaller(seller), escrow.id, { action: 'deliver' });
      delivered.open();
      await held.opened;
    });
    await delivered.opened;
    const dispute = escrows.act(knex, createCaller(buyer), escrow.id, { action: 'dispute', reason: 'Not as described' });
    await untilWaitingForLock(knex, '%from "escrows"%for update%');
    held.open();
    await deliver;
    const disputed = await dispute;

    const types = ['escrow.created', 'escrow.funded', 'escrow.delivered', 'escrow.disputed'];
    expect(disputed.status).toBe('disputed');
    expect(disputed.history.map((entry) => entry.type)).toEqual(types);
    const event = (await knex('events').where({ subject_type: 'escrow', subject_id: escrow.id, type: 'escrow.disputed' }).first('data')) as { data: { object: { history: Array<{ type: string }> }; previous_status: string } };
    expect(event.data.object.history.map((entry) => entry.type)).toEqual(types);
    expect(event.data.previous_status).toBe('delivered');
    expect(await escrows.get(createCaller(buyer), escrow.id)).toEqual(disputed);
  });
});
