import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { EventRepository } from '../../src/modules/events';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { bearer, businessPath, createCaller, createOrganization, memberToken, type TestCaller } from '../support/factories';
import { createCustomer } from '../support/invoice-factories';
import { escrowAction, openEscrow } from '../support/escrows';

let app: App;

beforeAll(async () => {
  app = await buildTestApp();
});

interface ApiEvent {
  id: string;
  type: string;
  object_type: string;
  object_id: string;
  sequence: number;
  organization_id: string | null;
  data: { object: Record<string, unknown> & { status?: string }; previous_status: string | null };
}

async function organisationWithInvoice() {
  const org = await createOrganization();
  const token = await memberToken(app, org, 'owner');
  const customer = await createCustomer(org);
  const post = (path: string, body?: object) => request(app).post(`${businessPath(org.id)}${path}`).set(bearer(token)).send(body ?? {});
  const created = await post('/invoices', { kind: 'invoice', customer_id: customer.id, currency: 'XOF', line_items: [{ description: 'Consulting', quantity: 2, unit_amount: '50000', tax_rate_bps: 1800 }] });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const invoiceId = created.body.data.id as string;
  return { org, token, post, invoiceId, customerId: customer.id };
}

function orgEvents(orgId: string, token: string, query: Record<string, string | number> = {}) {
  return request(app).get(`${businessPath(orgId)}/events`).query(query).set(bearer(token));
}

describe('the outbox: every change writes its event in its transaction', () => {
  it('an invoice created, finalised and paid: three events, sequence 1 2 3, each with the invoice as the API returned it', async () => {
    const { org, token, post, invoiceId } = await organisationWithInvoice();
    const finalized = await post(`/invoices/${invoiceId}/finalize`);
    expect(finalized.status).toBe(200);
    const paid = await post(`/invoices/${invoiceId}/pay`);
    expect(paid.status).toBe(200);
    const res = await orgEvents(org.id, token, { object_id: invoiceId });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const events = res.body.data.data as ApiEvent[];
    expect(events.map((e) => [e.type, e.sequence, e.data.previous_status])).toEqual([
      ['invoice.paid', 3, 'open'],
      ['invoice.finalized', 2, 'draft'],
      ['invoice.created', 1, null],
    ]);
    expect(events[0]?.data.object).toEqual(paid.body.data);
    expect(events[1]?.data.object).toEqual(finalized.body.data);
    for (const event of events) {
      expect(event.id).toMatch(/^evt_[0-9a-f]{32}$/);
      expect(event).toMatchObject({ object: 'event', object_type: 'invoice', object_id: invoiceId, organization_id: org.id });
    }
  });

  it('a change that rolls back leaves no event', async () => {
    const { org, token, post, invoiceId } = await organisationWithInvoice();
    // Paying a draft is refused (409): nothing changed, so nothing is recorded.
    const refused = await post(`/invoices/${invoiceId}/pay`);
    expect(refused.status).toBe(409);
    const res = await orgEvents(org.id, token, { object_id: invoiceId });
    expect((res.body.data.data as ApiEvent[]).map((e) => e.type)).toEqual(['invoice.created']);
  });

  it('an escrow event carries the escrow after the change (built with the change, history included) and the status before it', async () => {
    const buyer = await createCaller(app, { XOF: 1_000_000n });
    const seller = await createCaller(app);
    const { id } = await openEscrow(app, buyer, seller, { description: 'Motorbike' });
    const funded = await escrowAction(app, buyer, id, 'fund');
    expect(funded.status).toBe(200);
    const res = await request(app).get('/api/events').query({ object_id: id }).set(seller.auth);
    expect(res.status).toBe(200);
    const events = res.body.data.data as ApiEvent[];
    expect(events.map((e) => [e.type, e.sequence, e.data.object.status, e.data.previous_status])).toEqual([
      ['escrow.funded', 2, 'funded', 'awaiting_funding'],
      ['escrow.created', 1, 'awaiting_funding', null],
    ]);
    expect(events[0]?.organization_id).toBeNull();
    expect(events[0]?.data.object.amount_minor).toBe('500000');
  });

  it('a p2p transfer is one transfer.completed event, seen by the sender and the recipient, not by others', async () => {
    const alice = await createCaller(app, { XOF: 100_000n });
    const bob = await createCaller(app);
    const stranger = await createCaller(app);
    const sent = await request(app).post('/api/transfers').set(alice.auth).set('Idempotency-Key', crypto.randomUUID()).send({ amount: 2500, currency: 'XOF', recipientIdentifier: bob.user.email });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const transferId = sent.body.data.id as string;
    for (const who of [alice, bob]) {
      const res = await request(app).get('/api/events').query({ type: 'transfer.*' }).set(who.auth);
      const events = res.body.data.data as ApiEvent[];
      expect(events.map((e) => [e.type, e.object_id])).toEqual([['transfer.completed', transferId]]);
      expect(events[0]?.data.object).toMatchObject({ id: transferId, status: 'completed', amount_minor: '2500', currency: 'XOF' });
      const one = await request(app).get(`/api/events/${events[0]?.id}`).set(who.auth);
      expect(one.status).toBe(200);
      expect(one.body.data.id).toBe(events[0]?.id);
    }
    const theirs = await request(app).get('/api/events').set(stranger.auth);
    expect(theirs.body.data.data).toEqual([]);
    const alices = await request(app).get('/api/events').query({ type: 'transfer.completed' }).set(alice.auth);
    const notMine = await request(app).get(`/api/events/${(alices.body.data.data as ApiEvent[])[0]?.id}`).set(stranger.auth);
    expect(notMine.status).toBe(404);
    expect(notMine.body).toMatchObject({ success: false, error: 'NotFound' });
  });

  it('payment links and network status record their events with their organisation', async () => {
    const org = await createOrganization();
    const token = await memberToken(app, org, 'owner');
    const status = await request(app).patch(`${businessPath(org.id)}/network-status`).set(bearer(token)).send({ version: 0, is_open: true });
    expect(status.status, JSON.stringify(status.body)).toBe(200);
    const res = await orgEvents(org.id, token, { type: 'network_status.updated' });
    const [event] = res.body.data.data as ApiEvent[];
    expect(event).toMatchObject({ object_type: 'network_status', object_id: org.id, sequence: 1 });
    expect(event?.data.object).toEqual(status.body.data);
  });
});

describe('GET /business/organizations/{orgId}/events', () => {
  it('pages newest first with starting_after, filters by exact type and by prefix', async () => {
    const { org, token, post, invoiceId } = await organisationWithInvoice();
    await post(`/invoices/${invoiceId}/finalize`);
    await post(`/invoices/${invoiceId}/void`);
    const first = await orgEvents(org.id, token, { limit: 2 });
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ object: 'list', has_more: true });
    expect((first.body.data.data as ApiEvent[]).map((e) => e.type)).toEqual(['invoice.voided', 'invoice.finalized']);
    const second = await orgEvents(org.id, token, { limit: 2, starting_after: first.body.data.next_cursor as string });
    expect((second.body.data.data as ApiEvent[]).map((e) => e.type)).toEqual(['invoice.created']);
    expect(second.body.data).toMatchObject({ has_more: false, next_cursor: null });
    const exact = await orgEvents(org.id, token, { type: 'invoice.voided' });
    expect((exact.body.data.data as ApiEvent[]).map((e) => e.type)).toEqual(['invoice.voided']);
    const prefix = await orgEvents(org.id, token, { type: 'invoice.*' });
    expect(prefix.body.data.data).toHaveLength(3);
    const none = await orgEvents(org.id, token, { type: 'escrow.*' });
    expect(none.body.data.data).toEqual([]);
  });

  it('another organisation sees none of them: its list is empty and the event answers 404', async () => {
    const { org, token } = await organisationWithInvoice();
    const other = await createOrganization();
    const otherToken = await memberToken(app, other, 'owner');
    const mine = await orgEvents(org.id, token);
    const eventId = (mine.body.data.data as ApiEvent[])[0]?.id as string;
    expect((await request(app).get(`${businessPath(org.id)}/events/${eventId}`).set(bearer(token))).status).toBe(200);
    const foreign = await request(app).get(`${businessPath(other.id)}/events/${eventId}`).set(bearer(otherToken));
    expect(foreign.status).toBe(404);
    expect(foreign.body).toMatchObject({ success: false, error: 'NotFound' });
    expect((await orgEvents(other.id, otherToken)).body.data.data).toEqual([]);
    // Its cursor is not one of the other organisation's events.
    const cursor = await orgEvents(other.id, otherToken, { starting_after: eventId });
    expect(cursor.status).toBe(400);
    expect(cursor.body).toMatchObject({ success: false, error: 'ValidationError' });
  });

  it.each([
    [{ limit: 0 }, 'query.limit'],
    [{ limit: 101 }, 'query.limit'],
    [{ type: 'Invoice Paid' }, 'query.type'],
    [{ object_id: 'nope' }, 'query.object_id'],
    [{ starting_after: 'evt_123' }, 'query.starting_after'],
    [{ unknown: 'x' }, 'query.unknown'],
  ])('refuses %o with 400 ValidationError', async (query, field) => {
    const org = await createOrganization();
    const token = await memberToken(app, org, 'finance_manager');
    const res = await orgEvents(org.id, token, query);
    expect(res.status).toBe(400);
    expect(res.body.success).toBe(false);
    expect(res.body.error).toBe('ValidationError');
    expect(JSON.stringify(res.body.details)).toContain(field);
  });

  it('a malformed event id is a 400, an unknown one a 404', async () => {
    const org = await createOrganization();
    const token = await memberToken(app, org, 'admin');
    expect((await request(app).get(`${businessPath(org.id)}/events/evt_nothex`).set(bearer(token))).status).toBe(400);
    const unknown = await request(app).get(`${businessPath(org.id)}/events/evt_${'0'.repeat(32)}`).set(bearer(token));
    expect(unknown.status).toBe(404);
  });
});

describe('retention', () => {
  it('purges the events older than EVENT_RETENTION_DAYS and keeps the others', async () => {
    // Dates long before any other test's rows (on the embedded back-end the run's files share one database).
    const knex = testKnex();
    const events = new EventRepository(knex);
    const subject = crypto.randomUUID();
    const old = await events.record({ subjectType: 'escrow', subjectId: subject, type: 'escrow.created', actorUserId: null, occurredAt: new Date('2000-01-01T00:00:00Z') });
    const recent = await events.record({ subjectType: 'escrow', subjectId: subject, type: 'escrow.funded', actorUserId: null, occurredAt: new Date('2000-07-01T00:00:00Z') });
    // 90 days after 2000-06-01: everything before 2000-06-01 is past the retention.
    const later = await buildTestApp({ now: () => new Date('2000-08-30T00:00:00Z') });
    expect(await later.services.events.purgeExpired()).toBeGreaterThanOrEqual(1);
    expect(await knex('events').where({ id: old.id }).first()).toBeUndefined();
    expect(await knex('events').where({ id: recent.id }).first()).toBeDefined();
  });

  it('refuses to delete an event outside the purge', async () => {
    const { org } = await organisationWithInvoice();
    await expect(testKnex()('events').where({ organization_id: org.id }).del()).rejects.toMatchObject({ code: '23001' });
  });
});

describe('GET /events validation', () => {
  let me: TestCaller;
  beforeAll(async () => {
    me = await createCaller(app);
  });
  it('needs a bearer token', async () => {
    expect((await request(app).get('/api/events')).status).toBe(401);
  });
  it('refuses a limit beyond 100', async () => {
    const res = await request(app).get('/api/events').query({ limit: 500 }).set(me.auth);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('ValidationError');
  });
});
