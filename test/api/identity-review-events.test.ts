import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { openEscrow } from '../support/escrows';
import { createCaller, type TestCaller } from '../support/factories';
import { activeTontine } from '../support/tontines';

let app: App;

beforeAll(async () => {
  app = await buildTestApp();
});

const FIRST_NAME = 'Mariam-Review-Marker';

async function startSession(caller: TestCaller): Promise<string> {
  const res = await request(app).post('/api/identity/verification-sessions').set(caller.auth).send({ tier: 'tier_1' });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.id as string;
}

async function submitted(caller: TestCaller, id: string, idNumber: string): Promise<void> {
  const res = await request(app)
    .post(`/api/identity/verification-sessions/${id}/submit`)
    .set(caller.auth)
    .send({ id_type: 'passport', id_number: idNumber, first_name: FIRST_NAME, last_name: 'Traore', date_of_birth: '1990-01-31', nationality: 'SN' });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  await app.services.identity.processDue();
}

/** A session of a new person that the sandbox sends to review (an ID number ending 2222). */
async function underReview(): Promise<{ caller: TestCaller; id: string }> {
  const caller = await createCaller(app);
  const id = await startSession(caller);
  await submitted(caller, id, 'SN0011112222');
  return { caller, id };
}

describe('POST /admin/verification-sessions/{id}/reject', () => {
  it('takes just a reason_code and a note: retry_allowed, back to requires_input with a reason the person can act on', async () => {
    const admin = await createCaller(app, {}, { isAdmin: true });
    const { caller, id } = await underReview();
    const res = await request(app).post(`/api/admin/verification-sessions/${id}/reject`).set(admin.auth).send({ reason_code: 'document_unreadable', note: 'Photo blurred.' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({
      status: 'requires_input',
      last_error: { code: 'document_unreadable' },
      review: { decision: 'rejected', reviewer_user_id: admin.user.id, reason_code: 'document_unreadable', rejection: 'retry_allowed', note: 'Photo blurred.' },
    });
    const own = await request(app).get(`/api/identity/verification-sessions/${id}`).set(caller.auth);
    expect(own.body.data).toMatchObject({ status: 'requires_input', last_error: { code: 'document_unreadable' } });
  });

  it('reads expired_document and mismatch as the reasons they name; generic reasons show the person a generic error', async () => {
    const admin = await createCaller(app, {}, { isAdmin: true });
    const cases = [
      { given: 'expired_document', recorded: 'document_expired', shown: 'document_expired' },
      { given: 'mismatch', recorded: 'information_mismatch', shown: 'information_mismatch' },
      { given: 'suspected_fraud', recorded: 'suspected_fraud', shown: 'verification_failed' },
      { given: 'other', recorded: 'other', shown: 'verification_failed' },
    ];
    for (const c of cases) {
      const { id } = await underReview();
      const res = await request(app).post(`/api/admin/verification-sessions/${id}/reject`).set(admin.auth).send({ reason_code: c.given, note: 'Checked by hand.' });
      expect(res.status, `${c.given}: ${JSON.stringify(res.body)}`).toBe(200);
      expect(res.body.data, c.given).toMatchObject({ status: 'requires_input', last_error: { code: c.shown }, review: { reason_code: c.recorded, rejection: 'retry_allowed', note: 'Checked by hand.' } });
    }
  });

  it('a final rejection is asked for by name; an unknown reason code is refused (400)', async () => {
    const admin = await createCaller(app, {}, { isAdmin: true });
    const { id } = await underReview();
    const bad = await request(app).post(`/api/admin/verification-sessions/${id}/reject`).set(admin.auth).send({ reason_code: 'not_a_listed_reason', note: 'x' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('ValidationError');
    const final = await request(app).post(`/api/admin/verification-sessions/${id}/reject`).set(admin.auth).send({ reason_code: 'suspected_fraud', note: 'Forged.', rejection: 'final' });
    expect(final.body.data).toMatchObject({ status: 'rejected', review: { rejection: 'final', reason_code: 'suspected_fraud' } });
  });
});

describe('identity.verification_session events on GET /events', () => {
  type Event = { type: string; data: { object: Record<string, unknown>; previous_status: string | null } };

  async function eventsOf(caller: TestCaller, sessionId: string): Promise<Event[]> {
    const res = await request(app).get('/api/events?type=identity.%2A&limit=100').set(caller.auth);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(JSON.stringify(res.body)).not.toContain(FIRST_NAME);
    return (res.body.data.data as Event[]).filter((e) => e.data.object.id === sessionId).reverse();
  }

  const object = (id: string, status: string) => ({ id, object: 'verification_session', tier: 'tier_1', status });

  it('requires_input and needs_review (the provider), rejected (a reviewer): status and tier only', async () => {
    const admin = await createCaller(app, {}, { isAdmin: true });
    const caller = await createCaller(app);
    const id = await startSession(caller);
    await submitted(caller, id, 'SN0022221111');
    await submitted(caller, id, 'SN0022222222');
    const final = await request(app).post(`/api/admin/verification-sessions/${id}/reject`).set(admin.auth).send({ reason_code: 'watchlist_match', note: 'Listed.', rejection: 'final' });
    expect(final.status).toBe(200);
    const events = await eventsOf(caller, id);
    expect(events.map((e) => e.type)).toEqual([
      'identity.verification_session.processing',
      'identity.verification_session.requires_input',
      'identity.verification_session.processing',
      'identity.verification_session.needs_review',
      'identity.verification_session.rejected',
    ]);
    expect(events[1]?.data).toEqual({ object: object(id, 'requires_input'), previous_status: 'processing' });
    expect(events[3]?.data).toEqual({ object: object(id, 'needs_review'), previous_status: 'processing' });
    expect(events[4]?.data).toEqual({ object: object(id, 'rejected'), previous_status: 'needs_review' });
    expect(JSON.stringify(events)).not.toMatch(/SN00222|Listed|watchlist/);
  });

  it('canceled (the owner cancels)', async () => {
    const caller = await createCaller(app);
    const id = await startSession(caller);
    expect((await request(app).post(`/api/identity/verification-sessions/${id}/cancel`).set(caller.auth).send({})).status).toBe(200);
    const events = await eventsOf(caller, id);
    expect(events.map((e) => e.type)).toEqual(['identity.verification_session.canceled']);
    expect(events[0]?.data).toEqual({ object: object(id, 'canceled'), previous_status: 'requires_input' });
  });
});

describe('POST /me/close with something still open', () => {
  it('answers 409 AccountNotEmpty for an open escrow, to either party', async () => {
    const buyer = await createCaller(app);
    const seller = await createCaller(app);
    await openEscrow(app, buyer, seller);
    for (const party of [buyer, seller]) {
      const res = await request(app).post('/api/me/close').set(party.auth).send({});
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ error: 'AccountNotEmpty', details: { wallets_with_balance: [], open_escrows: 1, open_tontines: 0 } });
    }
  });

  it('answers 409 AccountNotEmpty for an active tontine membership', async () => {
    const organizer = await createCaller(app);
    const member = await createCaller(app);
    await activeTontine(app, organizer, [member], { max_members: 2 });
    const res = await request(app).post('/api/me/close').set(member.auth).send({});
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error: 'AccountNotEmpty', details: { wallets_with_balance: [], open_escrows: 0, open_tontines: 1 } });
    expect((await request(app).get('/api/me').set(member.auth)).status).toBe(200);
  });
});
