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

describe('per-object event sequences (a first event needs no counter row)', () => {
  const knex = testKnex();
  const sequencesOf = async (subjectId: string) =>
    ((await knex('events').where({ subject_id: subjectId }).orderBy('object_sequence').select('type', 'object_sequence')) as Array<{ type: string; object_sequence: number }>).map(
      (e) => [e.type, e.object_sequence],
    );
  const counterOf = async (subjectId: string) => ((await knex('event_sequences').where({ object_id: subjectId }).first('last')) as { last: number } | undefined)?.last;

  it('record_first_event writes sequence 1 alone; the next event, by record_event or the repository, continues at 2 and writes the counter', async () => {
    const viaFunction = crypto.randomUUID();
    const viaRepository = crypto.randomUUID();
    const viaRecordAll = crypto.randomUUID();
    for (const id of [viaFunction, viaRepository, viaRecordAll]) {
      await knex.raw(`SELECT record_first_event('transfer.created', 'transfer', ?, NULL, NULL, '{"status":"pending"}'::jsonb)`, [id]);
      expect(await sequencesOf(id)).toEqual([['transfer.created', 1]]);
      expect(await counterOf(id)).toBeUndefined();
    }
    await knex.raw(`SELECT record_event('transfer.completed', 'transfer', ?, NULL, NULL, '{"status":"completed"}'::jsonb, 'pending')`, [viaFunction]);
    await knex.raw(`SELECT record_event('transfer.failed', 'transfer', ?, NULL, NULL, '{"status":"failed"}'::jsonb, 'completed')`, [viaFunction]);
    expect(await sequencesOf(viaFunction)).toEqual([['transfer.created', 1], ['transfer.completed', 2], ['transfer.failed', 3]]);
    expect(await counterOf(viaFunction)).toBe(3);

    const events = new EventRepository(knex);
    const at = new Date();
    await events.record({ subjectType: 'transfer', subjectId: viaRepository, type: 'transfer.completed', actorUserId: null, occurredAt: at, object: { status: 'completed' } });
    expect(await sequencesOf(viaRepository)).toEqual([['transfer.created', 1], ['transfer.completed', 2]]);
    expect(await counterOf(viaRepository)).toBe(2);

    await events.recordAll([
      { subjectType: 'transfer', subjectId: viaRecordAll, type: 'transfer.completed', actorUserId: null, occurredAt: at, object: { status: 'completed' } },
      { subjectType: 'transfer', subjectId: viaRecordAll, type: 'transfer.failed', actorUserId: null, occurredAt: at, object: { status: 'failed' } },
    ]);
    expect(await sequencesOf(viaRecordAll)).toEqual([['transfer.created', 1], ['transfer.completed', 2], ['transfer.failed', 3]]);
    expect(await counterOf(viaRecordAll)).toBe(3);
  });

  it('concurrent second events of one object take distinct sequences (they meet on the counter row)', async () => {
    const id = crypto.randomUUID();
    await knex.raw(`SELECT record_first_event('transfer.created', 'transfer', ?, NULL, NULL, '{"status":"pending"}'::jsonb)`, [id]);
    await Promise.all(
      Array.from({ length: 6 }, (_, n) => knex.raw(`SELECT record_event('transfer.completed', 'transfer', ?, NULL, NULL, ?::jsonb, 'pending')`, [id, JSON.stringify({ n })])),
    );
    expect((await sequencesOf(id)).map(([, sequence]) => sequence)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(await counterOf(id)).toBe(7);
  });

  it('the retention purge keeps the sequence of an object whose only event it deletes: the next event never reuses it', async () => {
    const lone = crypto.randomUUID();
    const old = new Date('2000-01-01T00:00:00Z');
    await knex('events').insert({ subject_type: 'transfer', subject_id: lone, type: 'transfer.created', occurred_at: old, object_sequence: 1, data: { object: { status: 'pending' }, previous_status: null } });
    const purged = await knex.transaction((trx) => new EventRepository(trx).purgeOlderThan(new Date('2000-01-02T00:00:00Z'), 1000));
    expect(purged).toBeGreaterThanOrEqual(1);
    expect(await sequencesOf(lone)).toEqual([]);
    expect(await counterOf(lone)).toBe(1);
    await knex.raw(`SELECT record_event('transfer.completed', 'transfer', ?, NULL, NULL, '{"status":"completed"}'::jsonb, 'pending')`, [lone]);
    expect(await sequencesOf(lone)).toEqual([['transfer.completed', 2]]);
  });
});
