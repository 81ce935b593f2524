import { describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { TontineService } from '../../src/modules/tontines';
import { databaseKind, testKnex } from '../support/database';
import { fundedUser, type TestUser } from '../support/factories';
import { tontineThroughService } from '../support/tontines';
import { gate, untilWaitingForLock } from '../support/lock-wait';

/**
 * A contribution reads the tontine's members, cycles and contributions in the statement that
 * locks it (one round trip). A contribution pays its own row and posts, but leaves the tontine's
 * row as it was: a second contribution that waited for the lock gets the same row version back,
 * and must still see the payment it waited for, or the cycle's last contribution would not know
 * it is the last. The state comes from `tontine_state`, whose queries take their own snapshot
 * once the lock is held. Two connections: real PostgreSQL only.
 */
describe.runIf(databaseKind() === 'postgres')('a tontine contribution that waited for the lock', () => {
  const knex = testKnex();
  const tontines = new TontineService({ knex });
  const caller = (user: TestUser) => ({ userId: user.id });

  it('sees the contribution it waited for: the last one pays the pot out and opens the next cycle', { timeout: 30_000 }, async () => {
    const [organizer, member] = [await fundedUser({ XOF: 10_000n }), await fundedUser({ XOF: 10_000n })] as [TestUser, TestUser];
    const created = await tontineThroughService(tontines, [organizer, member], { body: { name: 'Raced', contribution_amount: 1000, max_members: 2 } });

    // The organizer pays and holds the lock; the member's contribution, the cycle's last, waits for it.
    const held = gate();
    const paid = gate();
    const first = withTransaction(knex, async (trx) => {
      await tontines.contribute(trx, caller(organizer), created.id, { cycle: 1 });
      paid.open();
      await held.opened;
    });
    await paid.opened;
    const last = tontines.contribute(knex, caller(member), created.id, { cycle: 1 });
    await untilWaitingForLock(knex, '%tontine_state(%for update%');
    held.open();
    await first;
    const { tontine } = await last;

    expect(tontine.current_cycle).toBe(2);
    expect(tontine.cycles?.map((cycle) => [cycle.status, cycle.collected_minor])).toEqual([
      ['paid_out', '2000'],
      ['open', '0'],
    ]);
    expect(tontine.pool_balance_minor).toBe('0');
    const events = (await knex('events').where({ subject_type: 'tontine', subject_id: created.id }).orderBy('object_sequence').select('type')).map((row) => row.type as string);
    expect(events.slice(-4)).toEqual(['tontine.contribution_paid', 'tontine.contribution_paid', 'tontine.payout_made', 'tontine.cycle_opened']);
    expect(await tontines.get(caller(member), created.id)).toEqual(tontine);
  });
});
