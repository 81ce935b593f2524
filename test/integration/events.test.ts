import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { EventRepository } from '../../src/modules/events';
import { testKnex } from '../support/database';

describe('event table', () => {
  it('records events and returns each subject history oldest first', async () => {
    const events = new EventRepository(testKnex());
    const first = crypto.randomUUID();
    const second = crypto.randomUUID();
    const at = new Date('2026-11-23T10:00:00Z');
    await events.record({ subjectType: 'escrow', subjectId: first, type: 'escrow.created', actorUserId: null, occurredAt: at, payload: { amount_minor: '500' } });
    await events.record({ subjectType: 'escrow', subjectId: first, type: 'escrow.funded', actorUserId: null, occurredAt: at });
    await events.record({ subjectType: 'tontine', subjectId: second, type: 'tontine.created', actorUserId: null, occurredAt: at });
    const history = await events.historyOf('escrow', [first, second]);
    expect(history.get(first)?.map((e) => [e.type, e.payload])).toEqual([
      ['escrow.created', { amount_minor: '500' }],
      ['escrow.funded', {}],
    ]);
    expect(history.get(second)).toEqual([]);
  });

  it('is append-only and refuses unknown subject types and malformed event types', async () => {
    const knex = testKnex();
    const id = crypto.randomUUID();
    const event = await new EventRepository(knex).record({ subjectType: 'tontine', subjectId: id, type: 'tontine.created', actorUserId: null, occurredAt: new Date() });
    await expect(knex('events').where({ id: event.id }).update({ type: 'tontine.canceled' })).rejects.toMatchObject({ code: '23001' });
    await expect(knex('events').where({ id: event.id }).delete()).rejects.toMatchObject({ code: '23001' });
    await expect(knex('events').insert({ subject_type: 'wallet', subject_id: id, type: 'wallet.frozen', occurred_at: new Date(), object_sequence: 1 })).rejects.toMatchObject({ code: '23514' });
    await expect(knex('events').insert({ subject_type: 'escrow', subject_id: id, type: 'Funded', occurred_at: new Date(), object_sequence: 1 })).rejects.toMatchObject({ code: '23514' });
  });
});
