import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { bearer, businessPath, createOrgAccount, createOrganization, createUser, memberToken, type TestOrganization } from '../support/factories';
import { createCustomer } from '../support/invoice-factories';

/**
 * The optional Idempotency-Key on the POSTs that do not require one: replay, conflict with
 * another request, and what is kept with the key. A replay never repeats the first answer's
 * body, so no secret shown once (an API key's, a webhook signing secret) is answered again or
 * stored with the key.
 */
let app: App;
const knex = testKnex();
let receiver: http.Server;
let receiverUrl = '';
let received = 0;

beforeAll(async () => {
  app = await buildTestApp({ env: { WEBHOOK_TIMEOUT_MS: '500' } });
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received += 1;
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});

afterAll(async () => {
  receiver.closeAllConnections();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

const newKey = () => crypto.randomUUID();

async function owner(): Promise<{ org: TestOrganization; auth: { Authorization: string }; post: (path: string, key: string, body?: object) => request.Test }> {
  const org = await createOrganization();
  const auth = bearer(await memberToken(app, org, 'owner'));
  const post = (path: string, key: string, body?: object) => {
    const call = request(app).post(`${businessPath(org.id)}${path}`).set(auth).set('Idempotency-Key', key);
    return body === undefined ? call : call.send(body);
  };
  return { org, auth, post };
}

/** Every stored key row of an operation with this key, as text (to look for a secret anywhere in it). */
async function keyRows(operation: string, key: string): Promise<Array<Record<string, unknown>>> {
  return knex('idempotency_keys').where({ operation, key });
}

describe('POST /api-keys with an Idempotency-Key (a secret shown once)', () => {
  it('creates one key; a replay answers 409 naming it, without the secret, and the secret is stored nowhere with the key', async () => {
    const { org, post } = await owner();
    const key = newKey();
    const body = { name: 'Shop server', scopes: ['payment_links:read'] };
    const first = await post('/api-keys', key, body).expect(201);
    const secret = first.body.data.secret as string;
    expect(secret).toMatch(/^sk_/);

    const replay = await post('/api-keys', key, body);
    expect(replay.status).toBe(409);
    expect(replay.body.error).toBe('IdempotencyKeyAlreadyProcessed');
    expect(replay.body.details).toEqual({ resource_type: 'api_key', resource_id: first.body.data.id, status: 'active' });
    expect(replay.headers.location).toBe(`${businessPath(org.id)}/api-keys/${first.body.data.id}`);
    expect(JSON.stringify(replay.body)).not.toContain(secret);
    expect(await knex('api_keys').where({ organization_id: org.id }).count<{ count: string }[]>('* as count')).toEqual([{ count: '1' }]);

    const rows = await keyRows('createApiKey', key);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'completed', response_status: 201, response_body: null, resource_type: 'api_key', resource_id: first.body.data.id });
    expect(JSON.stringify(rows[0])).not.toContain(secret);
    expect(JSON.stringify(rows[0])).not.toContain(secret.slice(-12));
  });

  it('the same key with another body answers 422 IdempotencyKeyReused naming the key it made, and makes no second one', async () => {
    const { org, post } = await owner();
    const key = newKey();
    const first = await post('/api-keys', key, { name: 'One', scopes: ['payment_links:read'] }).expect(201);
    const other = await post('/api-keys', key, { name: 'Two', scopes: ['payment_links:read'] });
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ error: 'IdempotencyKeyReused', details: { operation: 'createApiKey', resource_type: 'api_key', resource_id: first.body.data.id } });
    expect(JSON.stringify(other.body)).not.toContain(first.body.data.secret);
    expect(await knex('api_keys').where({ organization_id: org.id }).count<{ count: string }[]>('* as count')).toEqual([{ count: '1' }]);
  });

  it('a roll replayed with its key rolls once, and the new secret is not answered again', async () => {
    const { org, post } = await owner();
    const created = await post('/api-keys', newKey(), { name: 'Rolled', scopes: ['payment_links:read'] }).expect(201);
    const key = newKey();
    const rolled = await post(`/api-keys/${created.body.data.id}/roll`, key, { expire_current_in_seconds: 0 }).expect(200);
    const replay = await post(`/api-keys/${created.body.data.id}/roll`, key, { expire_current_in_seconds: 0 });
    expect(replay.status).toBe(409);
    expect(replay.body.details).toMatchObject({ resource_type: 'api_key', resource_id: created.body.data.id });
    expect(JSON.stringify(replay.body)).not.toContain(rolled.body.data.secret);
    // Rolled once: the new secret still authenticates (a second roll would have retired it).
    expect((await request(app).get(`${businessPath(org.id)}/payment-links`).set(bearer(rolled.body.data.secret))).status).toBe(200);
    const [row] = await keyRows('rollApiKey', key);
    expect(row?.response_body).toBeNull();
    expect(JSON.stringify(row)).not.toContain(rolled.body.data.secret);
  });
});

describe('webhook endpoints with an Idempotency-Key (a signing secret shown once)', () => {
  it('a rotation replayed with its key rotates once; the replay and the key row carry no secret', async () => {
    const { org, post } = await owner();
    const createKey = newKey();
    const created = await post('/webhook-endpoints', createKey, { url: receiverUrl, events: ['invoice.*'] }).expect(201);
    const endpointId = created.body.data.id as string;
    const key = newKey();
    const rotated = await post(`/webhook-endpoints/${endpointId}/rotate-secret`, key, { expire_current_in_seconds: 0 }).expect(200);
    const replay = await post(`/webhook-endpoints/${endpointId}/rotate-secret`, key, { expire_current_in_seconds: 0 });
    expect(replay.status).toBe(409);
    expect(replay.body.details).toEqual({ resource_type: 'webhook_endpoint', resource_id: endpointId, status: 'enabled' });
    expect(replay.headers.location).toBe(`${businessPath(org.id)}/webhook-endpoints/${endpointId}`);
    expect(JSON.stringify(replay.body)).not.toContain(rotated.body.data.secret);
    // Rotated once: the endpoint signs with the secret the first answer showed.
    expect((await knex('webhook_endpoints').where({ id: endpointId }).first('secret')).secret).toBe(rotated.body.data.secret);
    for (const [operation, usedKey, secret] of [
      ['rotateWebhookEndpointSecret', key, rotated.body.data.secret],
      ['createWebhookEndpoint', createKey, created.body.data.secret],
    ] as const) {
      const rows = await keyRows(operation, usedKey);
      expect(rows.length, operation).toBe(1);
      expect(rows[0]?.response_body, operation).toBeNull();
      expect(JSON.stringify(rows), operation).not.toContain(secret);
    }
  });

  it('a test delivery replayed with its key is attempted once: the replay names the delivery', async () => {
    const { post } = await owner();
    const created = await post('/webhook-endpoints', newKey(), { url: receiverUrl, events: ['invoice.*'] }).expect(201);
    const key = newKey();
    const before = received;
    const first = await post(`/webhook-endpoints/${created.body.data.id}/test`, key).expect(202);
    expect(first.body.data).toMatchObject({ status: 'succeeded', attempt_count: 1 });
    expect(received).toBe(before + 1);
    const replay = await post(`/webhook-endpoints/${created.body.data.id}/test`, key);
    expect(replay.status).toBe(409);
    expect(replay.body.details).toMatchObject({ resource_type: 'webhook_delivery', resource_id: first.body.data.id });
    expect(received).toBe(before + 1);
  });
});

describe('payment links and invoice actions with an Idempotency-Key', () => {
  it('a payment link creation replayed makes one link; another body with the key answers 422', async () => {
    const { org, post } = await owner();
    const account = await createOrgAccount(org);
    const key = newKey();
    const body = { destination_account_id: account.id, amount: 5000, reference: 'ORDER-1' };
    const first = await post('/payment-links', key, body).expect(201);
    const replay = await post('/payment-links', key, body);
    expect(replay.status).toBe(409);
    expect(replay.body.details).toEqual({ resource_type: 'payment_link', resource_id: first.body.data.id, status: 'active' });
    expect(replay.headers.location).toBe(`${businessPath(org.id)}/payment-links/${first.body.data.id}`);
    const other = await post('/payment-links', key, { ...body, amount: 6000 });
    expect(other.status).toBe(422);
    expect(other.body.error).toBe('IdempotencyKeyReused');
    expect(await knex('payment_links').where({ organization_id: org.id, kind: 'link' }).count<{ count: string }[]>('* as count')).toEqual([{ count: '1' }]);
  });

  it('marking an invoice paid, replayed, answers 409 naming the paid invoice (not InvalidStatusTransition); the key on another invoice is a reuse', async () => {
    const { org, post } = await owner();
    const customer = await createCustomer(org);
    const draft = async () =>
      (await post('/invoices', newKey(), { kind: 'invoice', customer_id: customer.id, currency: 'XOF', line_items: [{ description: 'Work', quantity: 1, unit_amount: '1000' }] }).expect(201)).body.data
        .id as string;
    const [a, b] = [await draft(), await draft()];
    for (const id of [a, b]) await post(`/invoices/${id}/finalize`, newKey()).expect(200);
    const key = newKey();
    await post(`/invoices/${a}/pay`, key).expect(200);
    const replay = await post(`/invoices/${a}/pay`, key);
    expect(replay.status).toBe(409);
    expect(replay.body).toMatchObject({ error: 'IdempotencyKeyAlreadyProcessed', details: { resource_type: 'invoice', resource_id: a, status: 'paid' } });
    const reused = await post(`/invoices/${b}/pay`, key);
    expect(reused.status).toBe(422);
    expect(reused.body.details).toMatchObject({ operation: 'payInvoice', resource_id: a });
    expect((await knex('documents').where({ id: b }).first('status')).status).toBe('open');
  });

  it('accepting an expired quote with a key cancels it, answers 409 QuoteExpired, and leaves the key free', async () => {
    const { org, post } = await owner();
    const customer = await createCustomer(org);
    const quote = (await post('/invoices', newKey(), { kind: 'quote', customer_id: customer.id, currency: 'XOF', line_items: [{ description: 'Work', quantity: 1, unit_amount: '1000' }] }).expect(201))
      .body.data.id as string;
    await post(`/invoices/${quote}/finalize`, newKey()).expect(200);
    await knex('documents').where({ id: quote }).update({ expires_at: new Date(Date.now() - 1000) });
    const key = newKey();
    const refused = await post(`/invoices/${quote}/accept`, key);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('QuoteExpired');
    expect((await knex('documents').where({ id: quote }).first('status')).status).toBe('canceled');
    expect(await keyRows('acceptQuote', key)).toEqual([]);
  });
});

describe('sessions and the Idempotency-Key', () => {
  it('login takes a key but never replays it: the same key logs in twice, two sessions, nothing recorded', async () => {
    const user = await createUser();
    const key = newKey();
    const login = () => request(app).post('/api/auth/login').set('Idempotency-Key', key).send({ identifier: user.email as string, password: user.password });
    const first = await login().expect(200);
    const second = await login().expect(200);
    expect(second.body.data.session_id).not.toBe(first.body.data.session_id);
    expect(await knex('idempotency_keys').where({ key })).toEqual([]);
  });

  it('login refuses a malformed key with 400 before any attempt is counted', async () => {
    const user = await createUser();
    const res = await request(app).post('/api/auth/login').set('Idempotency-Key', 'has space').send({ identifier: user.email as string, password: user.password });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('ValidationError');
  });

  it('a logout retried with the same token and key answers 401: the session has ended', async () => {
    const user = await createUser();
    const tokens = (await request(app).post('/api/auth/login').send({ identifier: user.email as string, password: user.password }).expect(200)).body.data;
    const key = newKey();
    const logout = () => request(app).post('/api/auth/logout').set(bearer(tokens.access_token)).set('Idempotency-Key', key);
    await logout().expect(200);
    expect((await logout()).status).toBe(401);
    const [row] = await knex('idempotency_keys').where({ key, user_id: user.id });
    expect(row).toMatchObject({ operation: 'logout', status: 'completed', resource_type: 'session', resource_id: tokens.session_id, response_body: null });
    expect(JSON.stringify(row)).not.toContain(tokens.access_token);
  });
});
