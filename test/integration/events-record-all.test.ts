import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { EventRepository, type NewEvent } from '../../src/modules/events';
import { testKnex } from '../support/database';

/**
 * EventRepository.recordAll writes an action's events in one statement (e.g. a tontine
 * contribution's events). What it stores must be exactly what `record` stores for the same
 * events one after the other: the per-object sequence, the order, the object and each event's
 * previous_status (the status shown by the event before it).
 */
const knex = testKnex();
const at = new Date('2026-11-24T10:00:00.123Z');

const stored = (subjectId: string) =>
  knex('events').where({ subject_type: 'tontine', subject_id: subjectId }).orderBy('sequence').select('type', 'actor_user_id', 'payload', 'occurred_at', 'object_sequence', 'data', 'organization_id');

/** Two earlier events (the second showing `active`), then the events of one action. */
function eventsFor(subjectId: string): { earlier: NewEvent[]; action: NewEvent[] } {
  const object = (status: string, cycle: number) => ({ id: subjectId, status, current_cycle: cycle, amount: 12.5, big: '12345678901234567890' });
  const base = { subjectType: 'tontine' as const, subjectId, actorUserId: null, occurredAt: at };
  return {
    earlier: [
      { ...base, type: 'tontine.created', object: object('forming', 0) },
      { ...base, type: 'tontine.started', object: object('active', 1), payload: { order: ['a', 'b'] } },
    ],
    action: [
      { ...base, type: 'tontine.contribution_paid', payload: { cycle: 1, late: false }, object: object('completed', 1) },
      { ...base, type: 'tontine.payout_made', payload: { cycle: 1, amount_minor: '2000' }, object: object('completed', 1) },
      { ...base, type: 'tontine.completed', payload: { cycles: 1 }, object: object('completed', 1), previousStatus: 'told' },
      { ...base, type: 'tontine.member_dissolution', payload: {}, object: object('completed', 1), previousStatus: null },
    ],
  };
}

describe('EventRepository.recordAll', () => {
  it('stores what record stores event by event: sequences, order, objects and previous statuses', async () => {
    const [one, all] = [crypto.randomUUID(), crypto.randomUUID()];
    await withTransaction(knex, async (trx) => {
      const events = new EventRepository(trx);
      const a = eventsFor(one);
      for (const event of [...a.earlier, ...a.action]) await events.record(event);
      const b = eventsFor(all);
      for (const event of b.earlier) await events.record(event);
      await events.recordAll(b.action);
    });
    const expected = await stored(one);
    expect(expected.map((e) => e.data.previous_status)).toEqual([null, 'forming', 'active', 'completed', 'told', null]);
    expect(await stored(all)).toEqual(expected.map((e) => ({ ...e, data: { ...e.data, object: { ...e.data.object, id: all } } })));
  });

  it('gives an object without events its first sequence and a null previous status', async () => {
    const subjectId = crypto.randomUUID();
    await withTransaction(knex, (trx) => new EventRepository(trx).recordAll(eventsFor(subjectId).action.slice(0, 2)));
    const rows = await stored(subjectId);
    expect(rows.map((e) => [e.type, e.object_sequence, e.data.previous_status])).toEqual([
      ['tontine.contribution_paid', 1, null],
      ['tontine.payout_made', 2, 'completed'],
    ]);
  });
});
