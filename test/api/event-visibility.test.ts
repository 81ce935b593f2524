import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ApiKeyScope } from '../../src/contract';
import { buildTestApp, type App } from '../support/app';
import { API_KEY_SCOPES, createApiKey } from '../support/api-keys';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, businessPath, createUser, memberToken, type TestOrganization } from '../support/factories';
import { createCustomer } from '../support/invoice-factories';

/**
 * An organisation's event is visible only to a caller who may read the object it carries: the
 * access rule of the object's own GET (role rules, API-key scopes) decides, for every role and
 * every scope. The expectation is read from the GETs themselves, so the events API can never
 * show more than they do. The same rule decides what a webhook endpoint receives: the objects
 * its configurer may read. The organisation is opened, staffed and changed through the API, so
 * it has events of the organisation, its members and its invitations too.
 */
let app: App;
let org: TestOrganization;
let ownerToken: string;
/** One object of each kind with events, and the path of its own GET. */
const objects: { type: string; path: string }[] = [];

beforeAll(async () => {
  app = await buildTestApp();
  ownerToken = await accessTokenFor(app, await createUser());
  const owner = bearer(ownerToken);
  const opened = await request(app)
    .post('/api/business/organizations')
    .set(owner)
    .send({ legal_name: 'Visibility SARL', country: 'CI', registration_number: 'CI-ABJ-VIS-1', legal_form: 'company', default_currency: 'XOF' });
  expect(opened.status, JSON.stringify(opened.body)).toBe(201);
  org = { id: opened.body.data.id, name: 'Visibility SARL', status: 'active' };
  expect((await request(app).patch(businessPath(org.id)).set(owner).send({ trading_name: 'Visibility' })).status).toBe(200);
  objects.push({ type: 'organization', path: '' });
  const colleague = await createUser();
  const invited = await request(app).post(`${businessPath(org.id)}/invitations`).set(owner).send({ identifier: colleague.email, role: 'cashier' });
  expect(invited.status, JSON.stringify(invited.body)).toBe(201);
  expect((await request(app).post(`/api/me/organization-invitations/${invited.body.data.id}/accept`).set(bearer(await accessTokenFor(app, colleague)))).status).toBe(200);
  expect((await request(app).patch(`${businessPath(org.id)}/members/${colleague.id}`).set(owner).send({ role: 'director' })).status).toBe(200);
  const revoked = await request(app).post(`${businessPath(org.id)}/invitations`).set(owner).send({ identifier: 'later@example.com', role: 'cashier' });
  expect((await request(app).delete(`${businessPath(org.id)}/invitations/${revoked.body.data.id}`).set(owner)).status).toBe(200);
  objects.push({ type: 'organization_member', path: '/members' }, { type: 'organization_invitation', path: '/invitations' });
  const customer = await createCustomer(org);
  const invoice = await request(app)
    .post(`${businessPath(org.id)}/invoices`)
    .set(owner)
    .send({ kind: 'invoice', customer_id: customer.id, currency: 'XOF', line_items: [{ description: 'Work', quantity: 1, unit_amount: '1000' }] });
  expect(invoice.status).toBe(201);
  objects.push({ type: 'invoice', path: `/invoices/${invoice.body.data.id}` });
  const endpoint = await request(app).post(`${businessPath(org.id)}/webhook-endpoints`).set(owner).send({ url: 'https://hooks.example.com/visibility', events: ['invoice.paid'] });
  expect(endpoint.status).toBe(201);
  expect((await request(app).post(`${businessPath(org.id)}/webhook-endpoints/${endpoint.body.data.id}/test`).set(owner)).status).toBe(202);
  objects.push({ type: 'webhook_endpoint', path: `/webhook-endpoints/${endpoint.body.data.id}` });
  const key = await request(app).post(`${businessPath(org.id)}/api-keys`).set(owner).send({ name: 'Visibility', scopes: ['invoices:read'] });
  expect(key.status).toBe(201);
  objects.push({ type: 'api_key', path: `/api-keys/${key.body.data.id}` });
});

interface Seen {
  events: number;
  visibleTypes: string[];
  readableTypes: string[];
  oneByOne: string[];
}

/** What a caller sees in the organisation's events, and what it may read through each object's own GET. */
async function seenBy(auth: { Authorization: string }): Promise<Seen | 'events refused'> {
  const list = await request(app).get(`${businessPath(org.id)}/events`).query({ limit: 100 }).set(auth);
  if (list.status === 403) return 'events refused';
  expect(list.status, JSON.stringify(list.body)).toBe(200);
  const events = list.body.data.data as { id: string; object_type: string }[];
  const readableTypes: string[] = [];
  for (const object of objects) {
    const res = await request(app).get(`${businessPath(org.id)}${object.path}`).set(auth);
    expect([200, 403], `${object.path}: ${JSON.stringify(res.body)}`).toContain(res.status);
    if (res.status === 200) readableTypes.push(object.type);
  }
  // Each event of the owner's full list, read one by one: 200 exactly for the readable types.
  const all = (await request(app).get(`${businessPath(org.id)}/events`).query({ limit: 100 }).set(bearer(ownerToken))).body.data.data as { id: string; object_type: string }[];
  const oneByOne: string[] = [];
  for (const event of all) {
    const res = await request(app).get(`${businessPath(org.id)}/events/${event.id}`).set(auth);
    expect([200, 404]).toContain(res.status);
    if (res.status === 200) oneByOne.push(event.object_type);
  }
  return { events: events.length, visibleTypes: [...new Set(events.map((e) => e.object_type))].sort(), readableTypes: readableTypes.sort(), oneByOne: [...new Set(oneByOne)].sort() };
}

describe('organisation events: visible to whoever may read their object', () => {
  it('the owner sees the events of every object kind (the fixture has them all)', async () => {
    const seen = (await seenBy(bearer(ownerToken))) as Seen;
    expect(seen.visibleTypes).toEqual(['api_key', 'invoice', 'organization', 'organization_invitation', 'organization_member', 'webhook_endpoint']);
  });

  it('a cashier sees no event at all, a finance manager none of invitations; a key with members:read and events:read sees those of the organisation and its members', async () => {
    expect(await seenBy(bearer(await memberToken(app, org, 'cashier')))).toBe('events refused');
    const finance = (await seenBy(bearer(await memberToken(app, org, 'finance_manager')))) as Seen;
    expect(finance.visibleTypes.filter((type) => type.startsWith('organization'))).toEqual(['organization', 'organization_member']);
    const key = await createApiKey(app, org, ['members:read', 'events:read']);
    const seen = (await seenBy(key.auth)) as Seen;
    expect({ list: seen.visibleTypes, oneByOne: seen.oneByOne }).toEqual({ list: ['organization', 'organization_member'], oneByOne: ['organization', 'organization_member'] });
    const types = (await request(app).get(`${businessPath(org.id)}/events`).query({ type: 'organization.*', limit: 100 }).set(key.auth)).body.data.data.map((e: { type: string }) => e.type);
    expect([...new Set(types)].sort()).toEqual(['organization.created', 'organization.member_joined', 'organization.member_role_changed', 'organization.updated']);
    // The organisation keeps at most 20 active keys: this one makes way for the tests below.
    expect((await request(app).delete(`${businessPath(org.id)}/api-keys/${key.id}`).set(bearer(ownerToken))).status).toBe(200);
  });

  it.each(['owner', 'admin', 'representative', 'director', 'finance_manager', 'cashier'] as const)('role %s: the events shown are exactly those of the objects it may GET', async (role) => {
    const seen = await seenBy(bearer(await memberToken(app, org, role)));
    if (seen === 'events refused') return;
    expect({ list: seen.visibleTypes, oneByOne: seen.oneByOne }).toEqual({ list: seen.readableTypes, oneByOne: seen.readableTypes });
  });

  it.each(API_KEY_SCOPES.filter((scope) => !scope.startsWith('events:')))('an API key with events:read and %s: the events shown are exactly those of the objects it may GET', async (scope) => {
    const key = await createApiKey(app, org, ['events:read', scope as ApiKeyScope]);
    const seen = (await seenBy(key.auth)) as Seen;
    expect({ list: seen.visibleTypes, oneByOne: seen.oneByOne }).toEqual({ list: seen.readableTypes, oneByOne: seen.readableTypes });
    // The organisation keeps at most 20 active keys (one per scope would pass it): each makes way for the next.
    expect((await request(app).delete(`${businessPath(org.id)}/api-keys/${key.id}`).set(bearer(ownerToken))).status).toBe(200);
  });

  it('an API key with events:read alone sees no event of API keys, endpoints or invoices', async () => {
    const key = await createApiKey(app, org, ['events:read']);
    for (const type of ['api_key.*', 'webhook_endpoint.*', 'invoice.*']) {
      const res = await request(app).get(`${businessPath(org.id)}/events`).query({ type }).set(key.auth);
      expect({ type, status: res.status, data: res.body.data.data }).toEqual({ type, status: 200, data: [] });
    }
  });
});

describe('webhook endpoints receive events about the objects their configurer may read', () => {
  async function deliveriesOf(endpointId: string): Promise<string[]> {
    const rows = (await testKnex()('webhook_deliveries as d').join('events as e', 'e.id', 'd.event_id').where('d.endpoint_id', endpointId).select('e.type')) as { type: string }[];
    return rows.map((r) => r.type).sort();
  }

  async function invoiceCreated(): Promise<void> {
    const customer = await createCustomer(org);
    const res = await request(app)
      .post(`${businessPath(org.id)}/invoices`)
      .set(bearer(ownerToken))
      .send({ kind: 'invoice', customer_id: customer.id, currency: 'XOF', line_items: [{ description: 'Work', quantity: 1, unit_amount: '1000' }] });
    expect(res.status).toBe(201);
  }

  it.each([
    [['webhook_endpoints:write'], []],
    [['webhook_endpoints:write', 'invoices:read'], ['invoice.created']],
    [['webhook_endpoints:write', 'payments:read'], []],
  ] as [ApiKeyScope[], string[]][])('a key with %j subscribing to * receives %j for a new invoice', async (scopes, expected) => {
    const key = await createApiKey(app, org, scopes);
    const created = await request(app).post(`${businessPath(org.id)}/webhook-endpoints`).set(key.auth).send({ url: 'https://hooks.example.com/scoped', events: ['*'] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const denied = await request(app).get(`${businessPath(org.id)}/invoices`).set(key.auth);
    expect(denied.status).toBe(expected.length ? 200 : 403);
    await invoiceCreated();
    expect(await deliveriesOf(created.body.data.id as string)).toEqual(expected);
  });

  it('an endpoint configured by the owner receives the invoice events', async () => {
    const created = await request(app).post(`${businessPath(org.id)}/webhook-endpoints`).set(bearer(ownerToken)).send({ url: 'https://hooks.example.com/owner', events: ['*'] });
    expect(created.status).toBe(201);
    await invoiceCreated();
    expect(await deliveriesOf(created.body.data.id as string)).toEqual(['invoice.created']);
  });
});
