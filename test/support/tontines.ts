import crypto from 'node:crypto';
import request from 'supertest';
import { expect } from 'vitest';
import type { Knex } from 'knex';
import type { CreateTontineInput, TontineService, TontineView } from '../../src/modules/tontines';
import { testKnex } from './database';
import { serviceCaller, type TestCaller, type TestUser } from './factories';
import type { App } from './app';

export const TONTINE_BODY = { name: 'Savings circle', currency: 'XOF', contribution_amount: 1000, frequency: 'weekly', max_members: 10, payout_order: 'join_order' } as const;

export async function createTontine(app: App, organizer: TestCaller, body: Record<string, unknown> = {}): Promise<{ id: string; [key: string]: unknown }> {
  const res = await request(app).post('/api/tontines').set(organizer.auth).send({ ...TONTINE_BODY, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

/** Invites and joins each member (organizer's invitation, then the member's join). */
export async function enrol(app: App, tontineId: string, organizer: TestCaller, members: readonly TestCaller[]): Promise<void> {
  for (const member of members) {
    const invited = await request(app).post(`/api/tontines/${tontineId}/invitations`).set(organizer.auth).send({ identifier: member.user.email });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    const joined = await request(app).post(`/api/tontines/${tontineId}/join`).set(member.auth);
    expect(joined.status, JSON.stringify(joined.body)).toBe(200);
  }
}

/**
 * POST /tontines/{id}/contributions with `{"cycle": n}`: the cycle given, or else the tontine's
 * open cycle read from the database when the request is sent (a test may still `.send()` more
 * fields, or its own `cycle`, before awaiting it).
 */
export function contribute(app: App, tontineId: string, member: TestCaller, key: string = crypto.randomUUID(), cycle?: number) {
  const test = request(app).post(`/api/tontines/${tontineId}/contributions`).set(member.auth).set('Idempotency-Key', key);
  if (cycle !== undefined) return test.send({ cycle });
  const send = test.then.bind(test);
  // Resolved when the request is awaited, not when it is built: the open cycle may move in between.
  test.then = ((onFulfilled, onRejected) =>
    openCycle(tontineId).then((open) => {
      const data = (test as unknown as { _data?: Record<string, unknown> })._data;
      if (data?.cycle === undefined) test.send({ cycle: open });
      return send(onFulfilled, onRejected);
    }, onRejected)) as typeof test.then;
  return test;
}

/** The tontine's open cycle (`current_cycle`; 1 before the start, so a refused early contribution names a valid cycle). */
export async function openCycle(tontineId: string): Promise<number> {
  const row = (await testKnex()('tontines').where({ id: tontineId }).first('current_cycle')) as { current_cycle: number } | undefined;
  return Math.max(1, row?.current_cycle ?? 1);
}

export async function poolBalance(tontineId: string): Promise<bigint> {
  const row = await testKnex()('ledger_accounts').where({ owner_type: 'platform', kind: 'tontine_pool', external_ref: tontineId }).first('balance_minor');
  if (!row) throw new Error(`tontine ${tontineId} has no pool account`);
  return BigInt(row.balance_minor as string);
}

/**
 * An active tontine: created by `organizer` (TONTINE_BODY with `body`), each of `members`
 * invited and joined in order, then started by the organizer. Returns it as the start answered.
 */
export async function activeTontine(app: App, organizer: TestCaller, members: readonly TestCaller[], body: Record<string, unknown> = {}): Promise<{ id: string; [key: string]: unknown }> {
  const tontine = await createTontine(app, organizer, body);
  await enrol(app, tontine.id, organizer, members);
  const started = await request(app).post(`/api/tontines/${tontine.id}/start`).set(organizer.auth);
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  return started.body.data;
}

/**
 * A tontine made through `tontines` directly (no HTTP): the first of `users` organizes it
 * (TONTINE_BODY with `body`, max_members the number of users unless told), invites and enrols
 * the others in order, and starts it unless `start` is false. The tontine as the last step answered.
 */
export async function tontineThroughService(
  tontines: TontineService,
  users: readonly TestUser[],
  options: { body?: Partial<CreateTontineInput>; start?: boolean; db?: Knex | Knex.Transaction } = {},
): Promise<TontineView> {
  const db = options.db ?? testKnex();
  const [organizer, ...others] = users as [TestUser, ...TestUser[]];
  const created = await tontines.create(db, serviceCaller(organizer), { ...TONTINE_BODY, max_members: users.length, ...options.body } as CreateTontineInput);
  for (const member of others) {
    await tontines.invite(db, serviceCaller(organizer), created.id, member.email as string);
    await tontines.join(db, serviceCaller(member), created.id);
  }
  return options.start === false ? created : tontines.start(db, serviceCaller(organizer), created.id);
}
