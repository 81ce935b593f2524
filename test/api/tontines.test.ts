import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { createCaller, walletBalance, type TestCaller } from '../support/factories';
import { activeTontine, contribute, createTontine, enrol, poolBalance, TONTINE_BODY } from '../support/tontines';

let app: App;
const knex = testKnex();

beforeAll(async () => {
  app = await buildTestApp();
});

const get = (id: string, who: TestCaller) => request(app).get(`/api/tontines/${id}`).set(who.auth);
const action = (id: string, name: string, who: TestCaller) => request(app).post(`/api/tontines/${id}/${name}`).set(who.auth);

async function eventTypes(id: string): Promise<string[]> {
  const rows = (await knex('events').where({ subject_type: 'tontine', subject_id: id }).orderBy('sequence').select('type')) as Array<{ type: string }>;
  return rows.map((row) => row.type);
}
const invite = (id: string, by: TestCaller, identifier: string | null) => request(app).post(`/api/tontines/${id}/invitations`).set(by.auth).send({ identifier });

/** A started 1,000 XOF tontine of three: the organizer and `third` hold 10,000 XOF, `member` only 500. */
async function startedTontine(): Promise<{ tontine: { id: string }; organizer: TestCaller; member: TestCaller; third: TestCaller }> {
  const organizer = await createCaller(app, { XOF: 10_000n });
  const member = await createCaller(app, { XOF: 500n });
  const third = await createCaller(app, { XOF: 10_000n });
  const tontine = await activeTontine(app, organizer, [member, third], { contribution_amount: 1000 });
  return { tontine, organizer, member, third };
}

/**
 * A 2,000 XOF tontine of four (10,000 XOF each, the organizer first) whose cycle 1 is paid out to
 * the organizer; with `cycleTwo`, the organizer and the second member have paid cycle 2 too.
 */
async function afterFirstPayout(cycleTwo: boolean): Promise<{ tontine: { id: string }; members: [TestCaller, TestCaller, TestCaller, TestCaller] }> {
  const members: TestCaller[] = [];
  for (let i = 0; i < 4; i += 1) members.push(await createCaller(app, { XOF: 10_000n }));
  const [organizer, second] = members as [TestCaller, TestCaller, TestCaller, TestCaller];
  const tontine = await activeTontine(app, organizer, members.slice(1), { contribution_amount: 2000, max_members: 4 });
  for (const who of members) await contribute(app, tontine.id, who, undefined, 1).expect(200);
  expect(await walletBalance(organizer.user.id, 'XOF')).toBe(16_000n);
  if (cycleTwo) {
    await contribute(app, tontine.id, organizer, undefined, 2).expect(200);
    await contribute(app, tontine.id, second, undefined, 2).expect(200);
  }
  return { tontine, members: members as [TestCaller, TestCaller, TestCaller, TestCaller] };
}

const dissolvePath = (id: string) => `/api/tontines/${id}`.replace('/api/', '/api/admin/') + '/dissolve';

/** The organizer's three tontines of the list tests: First (canceled), Second (forming), Third (active, organized by `member`). */
async function listedTontines(): Promise<{ organizer: TestCaller; first: { id: string }; second: { id: string } }> {
  const organizer = await createCaller(app);
  const member = await createCaller(app);
  const first = await createTontine(app, organizer, { name: 'First' });
  const second = await createTontine(app, organizer, { name: 'Second' });
  await activeTontine(app, member, [organizer], { name: 'Third' });
  await action(first.id, 'cancel', organizer).expect(200);
  return { organizer, first, second };
}

describe('creating a tontine (POST /tontines)', () => {
  it('creates a forming tontine whose organizer is member number one; Location; the random draw is committed, not revealed', async () => {
    const organizer = await createCaller(app);
    const res = await request(app)
      .post('/api/tontines')
      .set(organizer.auth)
      .send({ name: 'Market women', currency: 'EUR', contribution_amount: 50.5, frequency: 'monthly', max_members: 4, payout_order: 'random' });
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe(`/api/tontines/${res.body.data.id}`);
    expect(res.body.data).toMatchObject({
      name: 'Market women',
      status: 'forming',
      role: 'organizer',
      currency: 'EUR',
      contribution_amount: 50.5,
      contribution_amount_minor: '5050',
      frequency: 'monthly',
      member_count: 1,
      max_members: 4,
      current_cycle: 0,
      next_payout_at: null,
      payout_order: 'random',
      draw_seed: null,
      started_at: null,
      cycles: [],
      current_contributions: [],
      pool_balance: '0.00',
      net_position: '0.00',
      allowed_actions: ['invite', 'cancel'],
    });
    expect(res.body.data.seed_commitment).toMatch(/^[0-9a-f]{64}$/);
    expect(res.body.data.members).toEqual([
      { user_id: organizer.user.id, identifier: organizer.user.email, role: 'organizer', position: null, received: false, received_at: null, joined_at: expect.any(String) },
    ]);
    expect(await eventTypes(res.body.data.id)).toEqual(['tontine.created']);
    const inOrder = await createTontine(app, organizer, { payout_order: 'join_order' });
    expect(inOrder.seed_commitment).toBeNull();
  });

  it('400 for amounts finer than the currency, member counts outside 2..50, unknown fields, currencies and frequencies', async () => {
    const organizer = await createCaller(app);
    const base = { name: 'Circle', currency: 'XOF', contribution_amount: 1000, frequency: 'weekly', max_members: 5, payout_order: 'join_order' };
    const cases: Array<[object, string]> = [
      [{ ...base, contribution_amount: 1.5 }, 'body.contribution_amount'],
      [{ ...base, currency: 'EUR', contribution_amount: 0.001 }, 'body.contribution_amount'],
      [{ ...base, contribution_amount: 0 }, 'body.contribution_amount'],
      [{ ...base, max_members: 1 }, 'body.max_members'],
      [{ ...base, max_members: 51 }, 'body.max_members'],
      [{ ...base, frequency: 'daily' }, 'body.frequency'],
      [{ ...base, payout_order: 'age' }, 'body.payout_order'],
      [{ ...base, currency: 'ZZZ' }, 'body.currency'],
      [{ ...base, extra: 1 }, 'body'],
      [{ ...base, name: '' }, 'body.name'],
    ];
    for (const [body, field] of cases) {
      const res = await request(app).post('/api/tontines').set(organizer.auth).send(body);
      expect({ body, status: res.status, error: res.body.error }).toEqual({ body, status: 400, error: 'ValidationError' });
      expect(JSON.stringify(res.body.details)).toContain(field);
    }
  });

  it('needs a session (401)', async () => {
    const base = { name: 'Circle', currency: 'XOF', contribution_amount: 1000, frequency: 'weekly', max_members: 5, payout_order: 'join_order' };
    await request(app).post('/api/tontines').send(base).expect(401);
  });
});

describe('who sees a tontine: its members and invited users', () => {
  it('an outsider gets 404 TontineNotFound, as for an unknown id; a malformed id is 400', async () => {
    const organizer = await createCaller(app);
    const outsider = await createCaller(app);
    const tontine = await createTontine(app, organizer);
    const hidden = await get(tontine.id, outsider);
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ success: false, error: 'TontineNotFound', message: expect.any(String) });
    expect((await get(crypto.randomUUID(), organizer)).body.error).toBe('TontineNotFound');
    expect((await request(app).get('/api/tontines/not-a-uuid').set(organizer.auth)).status).toBe(400);
  });

  it('an invited user sees it with join as its one action, and it is not in their list', async () => {
    const organizer = await createCaller(app);
    const invitee = await createCaller(app);
    const tontine = await createTontine(app, organizer);
    await invite(tontine.id, organizer, invitee.user.email).expect(201);
    const seen = await get(tontine.id, invitee).expect(200);
    expect(seen.body.data).toMatchObject({ role: 'invited', allowed_actions: ['join'], member_count: 1 });
    // Invitations are not membership: the list shows only tontines one takes part in.
    expect((await request(app).get('/api/tontines').set(invitee.auth).expect(200)).body.data.data).toEqual([]);
  });

  it('an invited user may not start or cancel it (403 naming its allowed actions), nor leave it (404)', async () => {
    const organizer = await createCaller(app);
    const invitee = await createCaller(app);
    const tontine = await createTontine(app, organizer);
    await invite(tontine.id, organizer, invitee.user.email).expect(201);
    for (const name of ['start', 'cancel']) {
      const res = await action(tontine.id, name, invitee);
      expect({ name, status: res.status, error: res.body.error }).toEqual({ name, status: 403, error: 'NotTontineOrganizer' });
      expect(res.body.details).toEqual({ action: name, role: 'invited', allowed_actions: ['join'] });
    }
    expect((await action(tontine.id, 'leave', invitee)).status).toBe(404);
  });

  it('joining makes the invited user a member; each sees its own allowed actions', async () => {
    const organizer = await createCaller(app);
    const invitee = await createCaller(app);
    const tontine = await createTontine(app, organizer);
    await invite(tontine.id, organizer, invitee.user.email).expect(201);
    const joined = await action(tontine.id, 'join', invitee).send({});
    expect(joined.status).toBe(200);
    expect(joined.body.data).toMatchObject({ role: 'member', member_count: 2, allowed_actions: ['leave'] });
    expect(joined.body.data.members.map((m: { user_id: string }) => m.user_id)).toEqual([organizer.user.id, invitee.user.id]);
    const organizerView = await get(tontine.id, organizer).expect(200);
    expect(organizerView.body.data.allowed_actions).toEqual(['invite', 'start', 'cancel']);
    expect(await eventTypes(tontine.id)).toEqual(['tontine.created', 'tontine.member_invited', 'tontine.member_joined']);
  });
});

describe('an invited user who has not joined sees the members masked', () => {
  it('o***@domain and +225******01 with the counts before joining; in full after', async () => {
    const organizer = await createCaller(app);
    const phone = `+22507${crypto.randomInt(10_000_000, 99_999_999)}`;
    const byPhone = await createCaller(app, {}, { email: null, phone });
    const invited = await createCaller(app);
    const tontine = await createTontine(app, organizer);
    await request(app).post(`/api/tontines/${tontine.id}/invitations`).set(organizer.auth).send({ identifier: phone }).expect(201);
    await action(tontine.id, 'join', byPhone).expect(200);
    await request(app).post(`/api/tontines/${tontine.id}/invitations`).set(organizer.auth).send({ identifier: invited.user.email }).expect(201);

    const before = (await get(tontine.id, invited).expect(200)).body.data;
    const email = organizer.user.email as string;
    const maskedEmail = `${email.slice(0, 1)}***${email.slice(email.indexOf('@'))}`;
    const maskedPhone = `${phone.slice(0, 4)}${'*'.repeat(phone.length - 6)}${phone.slice(-2)}`;
    expect(maskedPhone).toMatch(/^\+225\*{8}\d\d$/);
    expect(before).toMatchObject({ role: 'invited', member_count: 2, max_members: 10, allowed_actions: ['join'] });
    expect(before.members.map((m: { identifier: string }) => m.identifier)).toEqual([maskedEmail, maskedPhone]);
    expect(JSON.stringify(before)).not.toContain(email);
    expect(JSON.stringify(before)).not.toContain(phone);

    await action(tontine.id, 'join', invited).expect(200);
    const after = (await get(tontine.id, invited).expect(200)).body.data;
    expect(after.members.map((m: { identifier: string }) => m.identifier)).toEqual([email, phone, invited.user.email]);
    expect((await get(tontine.id, organizer).expect(200)).body.data.members.map((m: { identifier: string }) => m.identifier)).toEqual([email, phone, invited.user.email]);
  });
});

describe('invitations: the organizer invites existing users, up to the maximum', () => {
  it('an unknown user is 404 InviteeNotFound; a malformed identifier 400', async () => {
    const organizer = await createCaller(app);
    const tontine = await createTontine(app, organizer, { max_members: 2 });
    expect((await invite(tontine.id, organizer, 'nobody@test.example')).body.error).toBe('InviteeNotFound');
    expect((await invite(tontine.id, organizer, 'nobody@test.example')).status).toBe(404);
    expect((await invite(tontine.id, organizer, 'not an identifier')).status).toBe(400);
  });

  it('a member is 409 AlreadyMember, invited or joining again', async () => {
    const organizer = await createCaller(app);
    const member = await createCaller(app);
    const tontine = await createTontine(app, organizer, { max_members: 2 });
    expect((await invite(tontine.id, organizer, organizer.user.email)).body).toMatchObject({ error: 'AlreadyMember' });
    await invite(tontine.id, organizer, member.user.email as string).expect(201);
    await action(tontine.id, 'join', member).expect(200);
    const again = await action(tontine.id, 'join', member);
    expect({ status: again.status, error: again.body.error }).toEqual({ status: 409, error: 'AlreadyMember' });
  });

  it('an open invitation sent again answers 201 and changes nothing', async () => {
    const organizer = await createCaller(app);
    const member = await createCaller(app);
    const tontine = await createTontine(app, organizer, { max_members: 2 });
    await invite(tontine.id, organizer, member.user.email as string).expect(201);
    await invite(tontine.id, organizer, member.user.email as string).expect(201);
    expect((await eventTypes(tontine.id)).filter((type) => type === 'tontine.member_invited')).toHaveLength(1);
  });

  it('only the organizer invites (403 NotTontineOrganizer)', async () => {
    const organizer = await createCaller(app);
    const member = await createCaller(app);
    const tontine = await createTontine(app, organizer, { max_members: 2 });
    await enrol(app, tontine.id, organizer, [member]);
    const byMember = await invite(tontine.id, member, organizer.user.email as string);
    expect({ status: byMember.status, error: byMember.body.error }).toEqual({ status: 403, error: 'NotTontineOrganizer' });
  });

  it('a full tontine refuses an invitation: 409 TontineFull with max_members', async () => {
    const organizer = await createCaller(app);
    const member = await createCaller(app);
    const tontine = await createTontine(app, organizer, { max_members: 2 });
    await enrol(app, tontine.id, organizer, [member]);
    const late = await createCaller(app);
    const full = await invite(tontine.id, organizer, late.user.email as string);
    expect({ status: full.status, error: full.body.error, details: full.body.details }).toEqual({ status: 409, error: 'TontineFull', details: { max_members: 2 } });
  });
});

describe('joining and leaving while forming', () => {
  it('a full tontine refuses a join with 409 TontineFull', async () => {
    const organizer = await createCaller(app);
    const [first, second] = [await createCaller(app), await createCaller(app)];
    const tontine = await createTontine(app, organizer, { max_members: 2 });
    for (const who of [first, second]) await invite(tontine.id, organizer, who.user.email).expect(201);
    await action(tontine.id, 'join', first).expect(200);
    const full = await action(tontine.id, 'join', second);
    expect({ status: full.status, error: full.body.error }).toEqual({ status: 409, error: 'TontineFull' });
  });

  it('joining without an invitation is 404 TontineNotFound', async () => {
    const organizer = await createCaller(app);
    const tontine = await createTontine(app, organizer, { max_members: 2 });
    const stranger = await createCaller(app);
    expect((await action(tontine.id, 'join', stranger)).body.error).toBe('TontineNotFound');
  });

  it('a member who leaves no longer sees it and needs a new invitation to come back', async () => {
    const organizer = await createCaller(app);
    const member = await createCaller(app);
    const tontine = await createTontine(app, organizer);
    await enrol(app, tontine.id, organizer, [member]);
    const left = await action(tontine.id, 'leave', member).expect(200);
    expect(left.body.data).toMatchObject({ role: 'former_member', member_count: 1, allowed_actions: [] });
    expect((await get(tontine.id, member)).body.error).toBe('TontineNotFound');
    expect((await get(tontine.id, organizer)).body.data.member_count).toBe(1);
    expect((await action(tontine.id, 'join', member)).status).toBe(404);
    await enrol(app, tontine.id, organizer, [member]);
    expect((await get(tontine.id, organizer)).body.data.members.map((m: { user_id: string }) => m.user_id)).toEqual([organizer.user.id, member.user.id]);
    expect(await eventTypes(tontine.id)).toContain('tontine.member_left');
  });

  it('the organizer cannot leave (422 OrganizerCannotLeave)', async () => {
    const organizer = await createCaller(app);
    const member = await createCaller(app);
    const tontine = await createTontine(app, organizer);
    await enrol(app, tontine.id, organizer, [member]);
    const organizerLeaves = await action(tontine.id, 'leave', organizer);
    expect({ status: organizerLeaves.status, error: organizerLeaves.body.error }).toEqual({ status: 422, error: 'OrganizerCannotLeave' });
  });
});

describe('starting: the organizer, with at least two members', () => {
  it('alone, the organizer gets 422 NotEnoughMembers', async () => {
    const organizer = await createCaller(app);
    const tontine = await createTontine(app, organizer, { frequency: 'biweekly' });
    const alone = await action(tontine.id, 'start', organizer);
    expect({ status: alone.status, error: alone.body.error, details: alone.body.details }).toEqual({ status: 422, error: 'NotEnoughMembers', details: { member_count: 1 } });
  });

  it('a member may not start it (403)', async () => {
    const organizer = await createCaller(app);
    const member = await createCaller(app);
    const tontine = await createTontine(app, organizer, { frequency: 'biweekly' });
    await enrol(app, tontine.id, organizer, [member]);
    expect((await action(tontine.id, 'start', member)).status).toBe(403);
  });

  it('a contribution before the start is 409 InvalidTontineState', async () => {
    const organizer = await createCaller(app);
    const member = await createCaller(app);
    const tontine = await createTontine(app, organizer, { frequency: 'biweekly' });
    await enrol(app, tontine.id, organizer, [member]);
    const early = await contribute(app, tontine.id, member);
    expect({ status: early.status, error: early.body.error, details: early.body.details }).toEqual({
      status: 409,
      error: 'InvalidTontineState',
      details: { status: 'forming', action: 'contribute', allowed_actions: ['leave'] },
    });
  });

  it('the start opens cycle 1 and schedules one cycle per member, in join order', async () => {
    const organizer = await createCaller(app);
    const member = await createCaller(app);
    const tontine = await createTontine(app, organizer, { frequency: 'biweekly' });
    await enrol(app, tontine.id, organizer, [member]);
    const started = await action(tontine.id, 'start', organizer).send({});
    expect(started.status).toBe(200);
    const data = started.body.data;
    expect(data).toMatchObject({ status: 'active', current_cycle: 1, allowed_actions: ['contribute', 'cancel'], draw_seed: null });
    const startedAt = new Date(data.started_at).getTime();
    expect(data.cycles.map((c: { number: number; beneficiary_user_id: string; status: string; due_at: string }) => [c.number, c.beneficiary_user_id, c.status, new Date(c.due_at).getTime() - startedAt])).toEqual([
      [1, organizer.user.id, 'open', 14 * 86_400_000],
      [2, member.user.id, 'upcoming', 28 * 86_400_000],
    ]);
    expect(data.next_payout_at).toBe(data.cycles[0].due_at);
    expect(data.members.map((m: { position: number }) => m.position)).toEqual([1, 2]);
    expect(data.current_contributions.map((c: { status: string }) => c.status)).toEqual(['pending', 'pending']);
  });

  it('once active, the forming actions answer 409 InvalidTontineState naming the status and allowed actions', async () => {
    const organizer = await createCaller(app);
    const member = await createCaller(app);
    const tontine = await createTontine(app, organizer, { frequency: 'biweekly' });
    await enrol(app, tontine.id, organizer, [member]);
    await action(tontine.id, 'start', organizer).send({}).expect(200);
    for (const [who, name] of [
      [member, 'leave'],
      [member, 'join'],
      [organizer, 'start'],
    ] as const) {
      const res = await action(tontine.id, name, who);
      if (name === 'join') {
        expect(res.body.error).toBe('AlreadyMember');
        continue;
      }
      expect({ name, status: res.status, error: res.body.error, details: res.body.details }).toEqual({
        name,
        status: 409,
        error: 'InvalidTontineState',
        details: { status: 'active', action: name, allowed_actions: who === organizer ? ['contribute', 'cancel'] : ['contribute'] },
      });
    }
    const invited = await invite(tontine.id, organizer, (await createCaller(app)).user.email);
    expect(invited.body).toMatchObject({ error: 'InvalidTontineState', details: { status: 'active', action: 'invite' } });
  });
});

describe('canceling: the organizer, before any payout', () => {
  it('a member may not cancel (403)', async () => {
    const organizer = await createCaller(app);
    const member = await createCaller(app);
    const tontine = await createTontine(app, organizer);
    await enrol(app, tontine.id, organizer, [member]);
    expect((await action(tontine.id, 'cancel', member)).status).toBe(403);
  });

  it('a forming tontine is canceled by its organizer; a canceled one allows nothing', async () => {
    const organizer = await createCaller(app);
    const member = await createCaller(app);
    const tontine = await createTontine(app, organizer);
    await enrol(app, tontine.id, organizer, [member]);
    const canceled = await action(tontine.id, 'cancel', organizer).expect(200);
    expect(canceled.body.data).toMatchObject({ status: 'canceled', allowed_actions: [], canceled_at: expect.any(String) });
    const again = await action(tontine.id, 'cancel', organizer);
    expect({ status: again.status, details: again.body.details }).toEqual({ status: 409, details: { status: 'canceled', action: 'cancel', allowed_actions: [] } });
  });

  it('an active tontine canceled before any payout refunds the open cycle\'s contributions and allows nothing more', async () => {
    const members = [await createCaller(app, { XOF: 10_000n }), await createCaller(app, { XOF: 10_000n }), await createCaller(app, { XOF: 10_000n })];
    const [organizer, second, third] = members as [TestCaller, TestCaller, TestCaller];
    const tontine = await activeTontine(app, organizer, [second, third], { contribution_amount: 2000 });
    await contribute(app, tontine.id, second).expect(200);
    await contribute(app, tontine.id, third).expect(200);
    expect(await poolBalance(tontine.id)).toBe(4_000n);
    // Before any payout the organizer may still cancel: the open cycle is refunded.
    const canceled = await action(tontine.id, 'cancel', organizer).expect(200);
    expect(canceled.body.data).toMatchObject({ status: 'canceled', pool_balance: '0', allowed_actions: [] });
    expect(canceled.body.data.current_contributions.map((c: { status: string }) => c.status)).toEqual(['pending', 'refunded', 'refunded']);
    expect(canceled.body.data.cycles.map((c: { status: string }) => c.status)).toEqual(['canceled', 'canceled', 'canceled']);
    expect([await walletBalance(organizer.user.id, 'XOF'), await walletBalance(second.user.id, 'XOF'), await walletBalance(third.user.id, 'XOF')]).toEqual([10_000n, 10_000n, 10_000n]);
    expect((await contribute(app, tontine.id, organizer)).body.details).toEqual({ status: 'canceled', action: 'contribute', allowed_actions: [] });
    const types = await eventTypes(tontine.id);
    expect(types.filter((t) => t === 'tontine.contribution_refunded')).toHaveLength(2);
    expect(types.at(-1)).toBe('tontine.canceled');
    await expectLedgerInvariants(knex);
  });
});

describe('contributions', () => {
  it('the body names the cycle: without it 400, without a JSON body 415, before anything moves', async () => {
    const { tontine, organizer } = await startedTontine();
    const noCycle = await request(app).post(`/api/tontines/${tontine.id}/contributions`).set(organizer.auth).set('Idempotency-Key', crypto.randomUUID()).send({});
    expect({ status: noCycle.status, error: noCycle.body.error, fields: noCycle.body.details.map((d: { field: string }) => d.field) }).toEqual({ status: 400, error: 'ValidationError', fields: ['body.cycle'] });
    expect((await request(app).post(`/api/tontines/${tontine.id}/contributions`).set(organizer.auth).set('Idempotency-Key', crypto.randomUUID())).status).toBe(415);
    expect(await walletBalance(organizer.user.id, 'XOF')).toBe(10_000n);
  });

  it('an unknown field is 400', async () => {
    const { tontine, member } = await startedTontine();
    const extra = await contribute(app, tontine.id, member).send({ amount: 1 });
    expect(extra.status).toBe(400);
  });

  it('moves the contribution from the wallet into the pool, with the tontine\'s Location', async () => {
    const { tontine, organizer } = await startedTontine();
    const paid = await contribute(app, tontine.id, organizer);
    expect(paid.status).toBe(200);
    expect(paid.headers.location).toBe(`/api/tontines/${tontine.id}`);
    expect(paid.body.data).toMatchObject({ pool_balance: '1000', net_position: '-1000', allowed_actions: ['cancel'] });
    expect(paid.body.data.current_contributions.map((c: { status: string }) => c.status)).toEqual(['paid', 'pending', 'pending']);
    expect(await walletBalance(organizer.user.id, 'XOF')).toBe(9_000n);
    expect(await poolBalance(tontine.id)).toBe(1_000n);
    await expectLedgerInvariants(knex);
  });

  it('a second contribution to the same cycle with a new key is 409 ContributionAlreadyPaid', async () => {
    const { tontine, organizer } = await startedTontine();
    await contribute(app, tontine.id, organizer).expect(200);
    const twice = await contribute(app, tontine.id, organizer);
    expect({ status: twice.status, error: twice.body.error, details: twice.body.details }).toEqual({ status: 409, error: 'ContributionAlreadyPaid', details: { cycle: 1 } });
  });

  it('without enough money: 422 InsufficientFunds, nothing moves, and the key stays free', async () => {
    const { tontine, organizer, member } = await startedTontine();
    await contribute(app, tontine.id, organizer).expect(200);
    const poorKey = crypto.randomUUID();
    const poor = await contribute(app, tontine.id, member, poorKey);
    expect(poor.status).toBe(422);
    expect(poor.body).toEqual({ success: false, error: 'InsufficientFunds', message: expect.any(String), details: { currency: 'XOF', available: '500', required: '1000' } });
    expect(await walletBalance(member.user.id, 'XOF')).toBe(500n);
    expect(await poolBalance(tontine.id)).toBe(1_000n);
    // The refusal did not consume the key: once funded, the same key pays.
    await knex.transaction(async (trx) => {
      const { fundWallet } = await import('../../src/modules/ledger');
      await fundWallet(trx, member.user.id, 'XOF', 500n);
    });
    await contribute(app, tontine.id, member, poorKey).expect(200);
    await expectLedgerInvariants(knex);
  });

  it('an outsider\'s contribution is 404 TontineNotFound', async () => {
    const { tontine } = await startedTontine();
    const outsider = await createCaller(app, { XOF: 5_000n });
    expect((await contribute(app, tontine.id, outsider)).body.error).toBe('TontineNotFound');
  });
});

describe('Idempotency-Key on tontine creation (optional)', () => {
  it('a processed key replays 409 naming the tontine (its contract documents resource_type tontine), and creates nothing', async () => {
    const organizer = await createCaller(app, { XOF: 5_000n });
    const key = crypto.randomUUID();
    const body = { ...TONTINE_BODY, name: `Replayed ${key.slice(0, 8)}` };
    const created = await request(app).post('/api/tontines').set(organizer.auth).set('Idempotency-Key', key).send(body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const replay = await request(app).post('/api/tontines').set(organizer.auth).set('Idempotency-Key', key).send(body);
    expect(replay.status, JSON.stringify(replay.body)).toBe(409);
    expect(replay.headers.location).toBe(`/api/tontines/${created.body.data.id}`);
    expect(replay.body).toEqual({
      success: false,
      error: 'IdempotencyKeyAlreadyProcessed',
      message: expect.any(String),
      details: { resource_type: 'tontine', resource_id: created.body.data.id, status: expect.any(String) },
    });
    const named = await knex('tontines').where({ organizer_user_id: organizer.user.id, name: body.name }).count<Array<{ n: string }>>({ n: '*' });
    expect(Number(named[0]?.n)).toBe(1);
  });
});

describe('Idempotency-Key on contributions: replayed as POST /transfers, never reused', () => {
  it('a processed key replays 409 with the contribution, and GET /idempotency-keys shows it completed', async () => {
    const { tontine, organizer } = await startedTontine();
    const key = crypto.randomUUID();
    await contribute(app, tontine.id, organizer, key).expect(200);
    const replay = await contribute(app, tontine.id, organizer, key, 1);
    expect(replay.status).toBe(409);
    expect(replay.headers.location).toBe(`/api/tontines/${tontine.id}`);
    expect(replay.body).toEqual({
      success: false,
      error: 'IdempotencyKeyAlreadyProcessed',
      message: expect.any(String),
      details: { resource_type: 'tontine_contribution', resource_id: expect.any(String), status: 'paid' },
    });
    const state = await request(app).get(`/api/idempotency-keys/${key}`).set(organizer.auth).expect(200);
    expect(state.body.data).toMatchObject({
      operation: 'contributeToTontine',
      status: 'completed',
      response_status: 200,
      resource: { type: 'tontine_contribution', id: replay.body.details.resource_id, status: 'paid', location: `/api/tontines/${tontine.id}` },
    });
  });

  it('the same key and the same cycle replay', async () => {
    const organizer = await createCaller(app, { XOF: 5_000n });
    const member = await createCaller(app, { XOF: 5_000n });
    const tontine = await activeTontine(app, organizer, [member]);
    const key = crypto.randomUUID();
    await contribute(app, tontine.id, organizer, key).expect(200);
    const replay = await contribute(app, tontine.id, organizer, key, 1);
    expect(replay.body.error).toBe('IdempotencyKeyAlreadyProcessed');
  });

  it('the key of a processed contribution sent to another tontine is 422 IdempotencyKeyReused', async () => {
    const { tontine, organizer } = await startedTontine();
    const key = crypto.randomUUID();
    await contribute(app, tontine.id, organizer, key).expect(200);
    const elsewhere = await createTontine(app, organizer);
    const reused = await contribute(app, elsewhere.id, organizer, key);
    expect({ status: reused.status, error: reused.body.error }).toEqual({ status: 422, error: 'IdempotencyKeyReused' });
  });
});

describe('the smallest unit of a three-decimal currency', () => {
  it('a 0.001 KWD tontine is created, read, listed, joined, paid and canceled (no 500 after a commit)', async () => {
    const organizer = await createCaller(app, { KWD: 10n });
    const member = await createCaller(app, { KWD: 10n });
    const created = await createTontine(app, organizer, { currency: 'KWD', contribution_amount: 0.001, max_members: 2 });
    expect(created).toMatchObject({ currency: 'KWD', contribution_amount: 0.001, contribution_amount_minor: '1' });
    expect((await get(created.id, organizer).expect(200)).body.data.contribution_amount).toBe(0.001);
    const listed = await request(app).get('/api/tontines').set(organizer.auth).expect(200);
    expect(listed.body.data.data.find((t: { id: string }) => t.id === created.id)).toMatchObject({ contribution_amount: 0.001 });
    await enrol(app, created.id, organizer, [member]);
    await action(created.id, 'start', organizer).expect(200);
    const paid = await contribute(app, created.id, member, undefined, 1).expect(200);
    expect(paid.body.data).toMatchObject({ pool_balance: '0.001', pool_balance_minor: '1' });
    const canceled = await action(created.id, 'cancel', organizer).expect(200);
    expect(canceled.body.data).toMatchObject({ status: 'canceled', contribution_amount: 0.001 });
    expect(await walletBalance(member.user.id, 'KWD')).toBe(10n);
  });
});

describe('a contribution names its cycle', () => {
  it('taps around a cycle boundary, each with a new key, pay one cycle once: ContributionAlreadyPaid or CycleNotOpen with details.open_cycle', async () => {
    const a = await createCaller(app, { XOF: 10_000n });
    const b = await createCaller(app, { XOF: 10_000n });
    const tontine = await activeTontine(app, a, [b], { contribution_amount: 1000, max_members: 2 });
    await contribute(app, tontine.id, a, undefined, 1).expect(200);
    // Both members saw cycle 1 open and tap three times each, every tap with a new key.
    const taps = await Promise.all([a, b, a, b, a, b].map((who) => contribute(app, tontine.id, who, crypto.randomUUID(), 1)));
    const outcomes = taps.map((res) => `${res.status} ${res.body.error ?? ''}`.trim());
    expect(outcomes.filter((o) => o === '200')).toHaveLength(1);
    expect(outcomes.filter((o) => o !== '200').every((o) => o === '409 ContributionAlreadyPaid'), outcomes.join()).toBe(true);
    expect(await knex('tontine_contributions').where({ tontine_id: tontine.id, cycle_number: 2, status: 'paid' })).toEqual([]);
    // Cycle 1's pot (2,000) went to a (first in join order); each paid 1,000 once.
    expect(await walletBalance(a.user.id, 'XOF')).toBe(11_000n);
    expect(await walletBalance(b.user.id, 'XOF')).toBe(9_000n);

    const paidOne = await contribute(app, tontine.id, b, undefined, 1);
    expect(paidOne.body).toEqual({ success: false, error: 'ContributionAlreadyPaid', message: 'You already paid your contribution to cycle 1.', details: { cycle: 1 } });
    const ahead = await contribute(app, tontine.id, b, undefined, 3);
    expect({ status: ahead.status, body: ahead.body }).toEqual({
      status: 409,
      body: { success: false, error: 'CycleNotOpen', message: 'Cycle 3 is not open: the open cycle is 2.', details: { cycle: 3, open_cycle: 2 } },
    });
    await contribute(app, tontine.id, b, undefined, 2).expect(200);
    expect(await poolBalance(tontine.id)).toBe(1_000n);
    await expectLedgerInvariants(knex);
  });
});

describe('a full tontine of N members over N cycles', () => {
  it('every member pays N contributions and receives N x contribution exactly once; the pool is empty between cycles and at the end', async () => {
    const n = 4;
    const amount = 2_500n;
    const members: TestCaller[] = [];
    for (let i = 0; i < n; i += 1) members.push(await createCaller(app, { XOF: 100_000n }));
    const organizer = members[0] as TestCaller;
    const tontine = await activeTontine(app, organizer, members.slice(1), { contribution_amount: Number(amount), max_members: n, frequency: 'monthly' });
    for (let cycle = 1; cycle <= n; cycle += 1) {
      // A different payer order every cycle: the last one triggers the payout.
      const payers = [...members.slice(cycle % n), ...members.slice(0, cycle % n)];
      for (const [index, who] of payers.entries()) {
        const res = await contribute(app, tontine.id, who).expect(200);
        const last = index === payers.length - 1;
        expect(await poolBalance(tontine.id)).toBe(last ? 0n : amount * BigInt(index + 1));
        if (!last) expect(res.body.data.current_cycle).toBe(cycle);
      }
    }
    const done = await get(tontine.id, organizer).expect(200);
    expect(done.body.data).toMatchObject({ status: 'completed', current_cycle: n, next_payout_at: null, pool_balance: '0', net_position: '0', allowed_actions: [] });
    expect(done.body.data.members.every((m: { received: boolean }) => m.received)).toBe(true);
    expect(done.body.data.cycles.map((c: { beneficiary_user_id: string }) => c.beneficiary_user_id)).toEqual(members.map((m) => m.user.id));
    for (const member of members) expect(await walletBalance(member.user.id, 'XOF')).toBe(100_000n);
    const postings = (await knex('postings').whereIn('kind', ['tontine.contribution', 'tontine.payout']).whereRaw("metadata->>'tontine_id' = ?", [tontine.id]).select('kind')) as Array<{ kind: string }>;
    expect(postings.filter((p) => p.kind === 'tontine.contribution')).toHaveLength(n * n);
    expect(postings.filter((p) => p.kind === 'tontine.payout')).toHaveLength(n);
    const types = await eventTypes(tontine.id);
    expect(types.filter((t) => t === 'tontine.payout_made')).toHaveLength(n);
    expect(types.filter((t) => t === 'tontine.cycle_opened')).toHaveLength(n - 1);
    expect(types.at(-1)).toBe('tontine.completed');
    expect((await contribute(app, tontine.id, organizer)).body.details).toEqual({ status: 'completed', action: 'contribute', allowed_actions: [] });
    await expectLedgerInvariants(knex);
  });
});

describe('the random draw (drawn cycle by cycle, verifiable at the end)', () => {
  it('nobody learns a beneficiary before its pot is complete; every draw is recomputed from the revealed seed and the cycle number', async () => {
    const n = 5;
    const members: TestCaller[] = [];
    for (let i = 0; i < n; i += 1) members.push(await createCaller(app, { XOF: 10_000n }));
    const organizer = members[0] as TestCaller;
    const created = await createTontine(app, organizer, { payout_order: 'random', max_members: n });
    await enrol(app, created.id, organizer, members.slice(1));
    const started = (await action(created.id, 'start', organizer).expect(200)).body.data;
    expect(started.draw_seed).toBeNull();
    expect(started.cycles.map((c: { beneficiary_user_id: string | null; beneficiary_identifier: string | null }) => [c.beneficiary_user_id, c.beneficiary_identifier])).toEqual(
      Array.from({ length: n }, () => [null, null]),
    );
    expect(started.members.map((m: { position: number | null }) => m.position)).toEqual(Array.from({ length: n }, () => null));
    const startedEvent = await knex('events').where({ subject_id: created.id, type: 'tontine.started' }).first('payload');
    expect(startedEvent.payload).toEqual({ payout_order: 'random', draw: 'per_cycle', members: members.map((m) => m.user.id) });

    const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('hex');
    const drawn: string[] = [];
    for (let cycle = 1; cycle <= n; cycle += 1) {
      for (const [index, who] of members.entries()) {
        const res = await contribute(app, created.id, who, undefined, cycle).expect(200);
        const view = res.body.data;
        const last = index === n - 1;
        if (!last) {
          // The pot is not complete: the organizer, like everyone, sees no beneficiary for this cycle, and no seed.
          const seen = (await get(created.id, organizer).expect(200)).body.data;
          expect(seen.draw_seed).toBeNull();
          expect(seen.cycles[cycle - 1].beneficiary_user_id).toBeNull();
          expect(seen.cycles.slice(0, cycle - 1).map((c: { beneficiary_user_id: string }) => c.beneficiary_user_id)).toEqual(drawn);
          if (cycle === 1) expect(seen.allowed_actions).toContain('cancel');
        } else {
          drawn.push(view.cycles[cycle - 1].beneficiary_user_id);
          expect(view.cycles[cycle - 1]).toMatchObject({ status: 'paid_out', beneficiary_identifier: members.find((m) => m.user.id === drawn.at(-1))?.user.email });
          expect(view.members.find((m: { user_id: string }) => m.user_id === drawn.at(-1)).position).toBe(cycle);
          if (cycle < n) {
            expect(view.draw_seed).toBeNull();
            expect(view.cycles[cycle].beneficiary_user_id).toBeNull();
          }
        }
      }
      if (cycle === 1) {
        // Too late to cancel: a pot has been paid out.
        const refused = await action(created.id, 'cancel', organizer);
        expect({ status: refused.status, error: refused.body.error }).toEqual({ status: 409, error: 'InvalidTontineState' });
      }
    }
    const done = (await get(created.id, organizer).expect(200)).body.data;
    expect(done.status).toBe('completed');
    expect(done.draw_seed).toMatch(/^[0-9a-f]{64}$/);
    expect(sha256(done.draw_seed)).toBe(created.seed_commitment);
    // Recomputed as the contract says: cycle k goes to the smallest SHA-256(seed:k:user_id) among those still waiting.
    const waiting = members.map((m) => m.user.id);
    const expected: string[] = [];
    for (let cycle = 1; cycle <= n; cycle += 1) {
      const winner = [...waiting].sort((a, b) => sha256(`${done.draw_seed}:${cycle}:${a}`).localeCompare(sha256(`${done.draw_seed}:${cycle}:${b}`)))[0] as string;
      expected.push(winner);
      waiting.splice(waiting.indexOf(winner), 1);
    }
    expect(drawn).toEqual(expected);
    expect(done.cycles.map((c: { beneficiary_user_id: string }) => c.beneficiary_user_id)).toEqual(expected);
    const drawEvents = (await knex('events').where({ subject_id: created.id, type: 'tontine.beneficiary_drawn' }).orderBy('sequence').select('payload')) as Array<{ payload: { cycle: number; beneficiary_user_id: string; draw_key: string } }>;
    expect(drawEvents.map((e) => [e.payload.cycle, e.payload.beneficiary_user_id, e.payload.draw_key])).toEqual(expected.map((id, i) => [i + 1, id, sha256(`${done.draw_seed}:${i + 1}:${id}`)]));
    for (const member of members) expect(await walletBalance(member.user.id, 'XOF')).toBe(10_000n);
    await expectLedgerInvariants(knex);
  });

  it('a random tontine whose whole order was drawn at its start (draw_per_cycle false) keeps it: seed shown, cycles paid to that order', async () => {
    const members: TestCaller[] = [];
    for (let i = 0; i < 3; i += 1) members.push(await createCaller(app, { XOF: 10_000n }));
    const organizer = members[0] as TestCaller;
    const created = await activeTontine(app, organizer, members.slice(1), { payout_order: 'random', max_members: 3 });
    // A tontine whose whole order was drawn at its start: every cycle named, positions set, draw_per_cycle false.
    const { draw_seed: seed } = (await knex('tontines').where({ id: created.id }).first('draw_seed')) as { draw_seed: string };
    const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('hex');
    const order = members.map((m) => m.user.id).sort((a, b) => sha256(`${seed}:${a}`).localeCompare(sha256(`${seed}:${b}`)));
    await knex.transaction(async (trx) => {
      await trx('tontines').where({ id: created.id }).update({ draw_per_cycle: false });
      for (const [index, userId] of order.entries()) {
        await trx('tontine_cycles').where({ tontine_id: created.id, number: index + 1 }).update({ beneficiary_user_id: userId });
        await trx('tontine_members').where({ tontine_id: created.id, user_id: userId }).update({ payout_position: index + 1 });
      }
    });
    expect((await get(created.id, organizer).expect(200)).body.data.draw_seed).toBe(seed);
    for (let cycle = 1; cycle <= 3; cycle += 1) for (const who of members) await contribute(app, created.id, who, undefined, cycle).expect(200);
    const done = (await get(created.id, organizer).expect(200)).body.data;
    expect(done.cycles.map((c: { beneficiary_user_id: string }) => c.beneficiary_user_id)).toEqual(order);
    expect(await eventTypes(created.id)).not.toContain('tontine.beneficiary_drawn');
    await expectLedgerInvariants(knex);
  });

  it('a random tontine canceled before its first payout reveals its seed (nothing left to draw)', async () => {
    const organizer = await createCaller(app);
    const member = await createCaller(app);
    const created = await createTontine(app, organizer, { payout_order: 'random', max_members: 2 });
    await enrol(app, created.id, organizer, [member]);
    expect((await action(created.id, 'start', organizer).expect(200)).body.data.draw_seed).toBeNull();
    const canceled = (await action(created.id, 'cancel', organizer).expect(200)).body.data;
    expect(crypto.createHash('sha256').update(canceled.draw_seed).digest('hex')).toBe(created.seed_commitment);
  });
});

describe('after a payout nobody can end the tontine but a platform administrator', () => {
  it('the organizer who took the first pot cannot cancel (409), and its view says so', async () => {
    const { tontine, members } = await afterFirstPayout(false);
    const [organizer] = members;
    const refused = await action(tontine.id, 'cancel', organizer);
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({
      success: false,
      error: 'InvalidTontineState',
      message: 'A pot has already been paid out: no member can end this tontine any more (only a platform administrator can dissolve it).',
      details: { status: 'active', action: 'cancel', allowed_actions: ['contribute'] },
    });
    const seen = (await get(tontine.id, organizer).expect(200)).body.data;
    expect(seen).toMatchObject({ status: 'active', current_cycle: 2, allowed_actions: ['contribute'], dissolution: null });
  });

  it('having received a pot changes nothing: the organizer pays cycle 2 like everyone', async () => {
    const { tontine, members } = await afterFirstPayout(false);
    const [organizer, second] = members;
    await contribute(app, tontine.id, organizer, undefined, 2).expect(200);
    await contribute(app, tontine.id, second, undefined, 2).expect(200);
    expect(await poolBalance(tontine.id)).toBe(4_000n);
  });

  it('only a platform administrator dissolves (403), with a reason (400), an existing tontine (404)', async () => {
    const { tontine, members } = await afterFirstPayout(true);
    const [organizer] = members;
    const path = dissolvePath(tontine.id);
    const reason = 'The organizer stopped paying after receiving the first pot.';
    const notAdmin = await request(app).post(path).set(organizer.auth).send({ reason });
    expect({ status: notAdmin.status, error: notAdmin.body.error }).toEqual({ status: 403, error: 'InsufficientRole' });
    const admin = await createCaller(app, {}, { isAdmin: true });
    expect((await request(app).post(path).set(admin.auth).send({})).status).toBe(400);
    expect((await request(app).post(`/api/admin/tontines/${crypto.randomUUID()}/dissolve`).set(admin.auth).send({ reason })).body.error).toBe('TontineNotFound');
  });

  it('dissolving refunds the open cycle, keeps the paid pot, and records every member\'s net position', async () => {
    const { tontine, members } = await afterFirstPayout(true);
    const [organizer, second, third, fourth] = members;
    const path = dissolvePath(tontine.id);
    const reason = 'The organizer stopped paying after receiving the first pot.';
    const admin = await createCaller(app, {}, { isAdmin: true });
    const dissolved = await request(app).post(path).set(admin.auth).send({ reason }).expect(200);
    expect(dissolved.body.data).toMatchObject({
      status: 'canceled',
      role: 'administrator',
      canceled_at: expect.any(String),
      dissolution: { reason, dissolved_at: dissolved.body.data.canceled_at, dissolved_by: 'platform_administrator' },
      pool_balance: '0',
      allowed_actions: [],
    });
    expect(dissolved.body.data.current_contributions.map((c: { status: string }) => c.status)).toEqual(['refunded', 'refunded', 'pending', 'pending']);
    expect(dissolved.body.data.cycles.map((c: { status: string }) => c.status)).toEqual(['paid_out', 'canceled', 'canceled', 'canceled']);
    // Cycle 2's payments went back; cycle 1's payout stands (the positions say who owes whom).
    expect(await Promise.all(members.map((m) => walletBalance(m.user.id, 'XOF')))).toEqual([16_000n, 8_000n, 8_000n, 8_000n]);
    for (const member of members) expect((await get(tontine.id, member).expect(200)).body.data.dissolution).toMatchObject({ reason });
    const events = (await knex('events').where({ subject_id: tontine.id }).whereIn('type', ['tontine.dissolved', 'tontine.member_dissolution']).orderBy('sequence').select('type', 'actor_user_id', 'payload')) as Array<{
      type: string;
      actor_user_id: string;
      payload: Record<string, unknown>;
    }>;
    const positions = [
      { user_id: organizer.user.id, net_position_minor: '6000' },
      { user_id: second.user.id, net_position_minor: '-2000' },
      { user_id: third.user.id, net_position_minor: '-2000' },
      { user_id: fourth.user.id, net_position_minor: '-2000' },
    ];
    expect(events).toEqual([
      { type: 'tontine.dissolved', actor_user_id: admin.user.id, payload: { reason, refunded_minor: '4000', net_positions: positions } },
      ...positions.map((position) => ({ type: 'tontine.member_dissolution', actor_user_id: admin.user.id, payload: { ...position, reason } })),
    ]);
    await expectLedgerInvariants(knex);
  });

  it('a dissolved tontine cannot be dissolved again (409)', async () => {
    const { tontine } = await afterFirstPayout(true);
    const path = dissolvePath(tontine.id);
    const reason = 'The organizer stopped paying after receiving the first pot.';
    const admin = await createCaller(app, {}, { isAdmin: true });
    await request(app).post(path).set(admin.auth).send({ reason }).expect(200);
    const again = await request(app).post(path).set(admin.auth).send({ reason });
    expect(again.body).toMatchObject({ error: 'InvalidTontineState', details: { status: 'canceled', action: 'dissolve', allowed_actions: [] } });
  });
});

describe('an administrator who is a member never dissolves its own tontine', () => {
  it('answers 403 ConflictOfInterest to an administrator organizer who took the first pot, and changes nothing', async () => {
    const organizer = await createCaller(app, { XOF: 10_000n }, { isAdmin: true });
    const others: TestCaller[] = [];
    for (let i = 0; i < 2; i += 1) others.push(await createCaller(app, { XOF: 10_000n }));
    const tontine = await activeTontine(app, organizer, others, { contribution_amount: 2000, max_members: 3 });
    for (const who of [organizer, ...others]) await contribute(app, tontine.id, who, undefined, 1).expect(200);
    const path = `/api/admin/tontines/${tontine.id}/dissolve`;
    const refused = await request(app).post(path).set(organizer.auth).send({ reason: 'I would rather keep the pot.' });
    expect({ status: refused.status, error: refused.body.error }).toEqual({ status: 403, error: 'ConflictOfInterest' });
    expect((await get(tontine.id, organizer).expect(200)).body.data).toMatchObject({ status: 'active', dissolution: null });
    const outsider = await createCaller(app, {}, { isAdmin: true });
    await request(app).post(path).set(outsider.auth).send({ reason: 'Dissolved by another administrator.' }).expect(200);
  });
});

describe('20 concurrent contributions of one cycle', () => {
  it('every member pays once and the pot is paid out once', async () => {
    const members: TestCaller[] = [];
    for (let i = 0; i < 20; i += 1) members.push(await createCaller(app, { XOF: 10_000n }));
    const organizer = members[0] as TestCaller;
    const tontine = await activeTontine(app, organizer, members.slice(1), { contribution_amount: 1000, max_members: 20 });
    // Each member's client also retries at once with the same key: one of the two pays.
    const responses = await Promise.all(
      members.flatMap((who) => {
        const key = crypto.randomUUID();
        return [contribute(app, tontine.id, who, key), contribute(app, tontine.id, who, key)];
      }),
    );
    const statuses = responses.map((res) => `${res.status} ${res.body.error ?? ''}`.trim());
    expect(statuses.filter((s) => s === '200')).toHaveLength(20);
    expect(statuses.filter((s) => s !== '200').every((s) => s === '409 IdempotencyKeyAlreadyProcessed' || s === '409 ConcurrentOperation'), statuses.join()).toBe(true);
    expect(await knex('tontine_contributions').where({ tontine_id: tontine.id, cycle_number: 2, status: 'paid' })).toEqual([]);
    const paidBy = (await knex('tontine_contributions').where({ tontine_id: tontine.id, cycle_number: 1, status: 'paid' }).select('user_id')) as Array<{ user_id: string }>;
    expect(new Set(paidBy.map((row) => row.user_id)).size).toBe(20);
    const payouts = await knex('postings').where({ kind: 'tontine.payout' }).whereRaw("metadata->>'tontine_id' = ?", [tontine.id]).select('id');
    expect(payouts).toHaveLength(1);
    expect(await walletBalance(organizer.user.id, 'XOF')).toBe(9_000n + 20_000n);
    for (const who of members.slice(1)) expect(await walletBalance(who.user.id, 'XOF')).toBe(9_000n);
    expect(await poolBalance(tontine.id)).toBe(0n);
    expect((await get(tontine.id, organizer)).body.data.current_cycle).toBe(2);
    await expectLedgerInvariants(knex);
  });
});

describe('GET /tontines', () => {
  it("lists the caller's tontines newest first, as organizer or member, without their members", async () => {
    const { organizer } = await listedTontines();
    const all = await request(app).get('/api/tontines').set(organizer.auth).expect(200);
    expect(all.body.data.data.map((t: { name: string; role: string; status: string }) => [t.name, t.role, t.status])).toEqual([
      ['Third', 'member', 'active'],
      ['Second', 'organizer', 'forming'],
      ['First', 'organizer', 'canceled'],
    ]);
    expect(all.body.data.data[0]).toMatchObject({ member_count: 2, current_cycle: 1, next_payout_at: expect.any(String) });
    expect(all.body.data.data[0].members).toBeUndefined();
  });

  it('pages with next_cursor and starting_after', async () => {
    const { organizer, first, second } = await listedTontines();
    const page1 = await request(app).get('/api/tontines').query({ limit: 2 }).set(organizer.auth).expect(200);
    expect(page1.body.data).toMatchObject({ has_more: true, next_cursor: second.id });
    const page2 = await request(app).get('/api/tontines').query({ limit: 2, starting_after: page1.body.data.next_cursor }).set(organizer.auth).expect(200);
    expect(page2.body.data).toMatchObject({ has_more: false, next_cursor: null });
    expect(page2.body.data.data.map((t: { id: string }) => t.id)).toEqual([first.id]);
  });

  it('filters by status; an unknown status is 400', async () => {
    const { organizer, second } = await listedTontines();
    const forming = await request(app).get('/api/tontines').query({ status: 'forming' }).set(organizer.auth).expect(200);
    expect(forming.body.data.data.map((t: { id: string }) => t.id)).toEqual([second.id]);
    expect((await request(app).get('/api/tontines').query({ status: 'paused' }).set(organizer.auth)).status).toBe(400);
  });

  it("another caller's tontine is no cursor (400)", async () => {
    const { organizer } = await listedTontines();
    const foreignCursor = await request(app).get('/api/tontines').query({ starting_after: (await createTontine(app, await createCaller(app))).id }).set(organizer.auth);
    expect({ status: foreignCursor.status, error: foreignCursor.body.error }).toEqual({ status: 400, error: 'ValidationError' });
  });

  it('needs a session (401)', async () => {
    await request(app).get('/api/tontines').expect(401);
  });
});
