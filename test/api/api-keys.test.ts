import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { API_KEY_SCOPES, createApiKey } from '../support/api-keys';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, businessPath, createMember, createOrganization, memberToken, type TestOrganization } from '../support/factories';

/** The API keys of an organisation, managed by its owner or admin. */
const KEY_FORMAT = /^sk_test_([0-9A-Za-z]{12})_[0-9A-Za-z]{38}$/;
const DAY_MS = 86_400_000;

let clockMs = Date.now();
let app: App;
let org: TestOrganization;
let owner: string;
let ownerId: string;

beforeAll(async () => {
  app = await buildTestApp({ now: () => new Date(clockMs) });
  org = await createOrganization();
  const user = await createMember(org, 'owner');
  ownerId = user.id;
  owner = await accessTokenFor(app, user);
});

const keysPath = (orgId: string) => `${businessPath(orgId)}/api-keys`;

function create(token: string, body: object, orgId = org.id) {
  return request(app).post(keysPath(orgId)).set(bearer(token)).send(body);
}

async function eventsOf(keyId: string) {
  return testKnex()('events').where({ subject_type: 'api_key', subject_id: keyId }).orderBy('sequence');
}

describe('POST /business/organizations/{orgId}/api-keys', () => {
  it('answers 201 with the secret once, only a hash of it is stored, and the event api_key.created names the acting user', async () => {
    const before = clockMs;
    const res = await create(owner, { name: 'Shop server', scopes: ['payments:read', 'payment_links:write'] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const key = res.body.data;
    expect(key.secret).toMatch(KEY_FORMAT);
    const publicId = KEY_FORMAT.exec(key.secret)?.[1];
    expect(key).toMatchObject({
      name: 'Shop server',
      prefix: `sk_test_${publicId}`,
      last4: key.secret.slice(-4),
      scopes: ['payment_links:write', 'payments:read'],
      status: 'active',
      last_used_at: null,
      created_by: ownerId,
    });
    expect(new Date(key.expires_at).getTime() - before).toBeGreaterThanOrEqual(90 * DAY_MS - 1000);
    expect(new Date(key.expires_at).getTime() - before).toBeLessThanOrEqual(90 * DAY_MS + 1000);

    const got = await request(app).get(`${keysPath(org.id)}/${key.id}`).set(bearer(owner));
    expect(got.status).toBe(200);
    expect(got.body.data).not.toHaveProperty('secret');
    const { secret, ...shown } = key;
    expect(got.body.data).toEqual(shown);
    expect(JSON.stringify(got.body)).not.toContain(secret.slice(21, 53));
    const list = await request(app).get(keysPath(org.id)).set(bearer(owner));
    expect(list.status).toBe(200);
    expect(list.body.data.data.map((k: { id: string }) => k.id)).toContain(key.id);
    expect(JSON.stringify(list.body)).not.toContain(secret.slice(21, 53));

    const rows = [...(await testKnex()('api_keys').where({ id: key.id })), ...(await testKnex()('api_key_secrets').where({ api_key_id: key.id }))];
    expect(JSON.stringify(rows)).not.toContain(secret.slice(21, 53));
    expect(rows[1].secret_hash).toMatch(/^[0-9a-f]{64}$/);

    const events = await eventsOf(key.id);
    expect(events.map((e) => [e.type, e.actor_user_id])).toEqual([['api_key.created', ownerId]]);
    expect(events[0].payload).toMatchObject({ organization_id: org.id, name: 'Shop server', prefix: key.prefix });
    expect(JSON.stringify(events)).not.toContain(secret.slice(21, 53));
  });

  it('an admin may manage keys; other roles get 403 InsufficientRole; another organisation 404', async () => {
    const admin = await memberToken(app, org, 'admin');
    expect((await create(admin, { name: 'Admin key', scopes: ['invoices:read'] })).status).toBe(201);
    for (const role of ['finance_manager', 'representative', 'director', 'cashier'] as const) {
      const res = await create(await memberToken(app, org, role), { name: 'x', scopes: ['invoices:read'] });
      expect([res.status, res.body.error], role).toEqual([403, 'InsufficientRole']);
      const list = await request(app).get(keysPath(org.id)).set(bearer(await memberToken(app, org, role)));
      expect([list.status, list.body.error], role).toEqual([403, 'InsufficientRole']);
    }
    const other = await createOrganization();
    const res = await create(owner, { name: 'x', scopes: ['invoices:read'] }, other.id);
    expect([res.status, res.body.error]).toEqual([404, 'NotFound']);
  });

  it('expiry: in the future and at most one year ahead (400 otherwise); the contract refuses unknown scopes and empty lists', async () => {
    const at = (ms: number) => new Date(clockMs + ms).toISOString();
    expect((await create(owner, { name: 'year', scopes: ['accounts:read'], expires_at: at(365 * DAY_MS) })).status).toBe(201);
    for (const expires of [at(-1000), at(0), at(367 * DAY_MS)]) {
      const res = await create(owner, { name: 'bad', scopes: ['accounts:read'], expires_at: expires });
      expect(res.status, expires).toBe(400);
      expect(res.body.details).toEqual([{ field: 'body.expires_at', message: expect.any(String) }]);
    }
    for (const body of [{ name: 'x', scopes: [] }, { name: 'x', scopes: ['payments:admin'] }, { name: '', scopes: ['payments:read'] }, { scopes: ['payments:read'] }, { name: 'x', scopes: ['payments:read'], extra: 1 }]) {
      const res = await create(owner, body);
      expect([res.status, res.body.error], JSON.stringify(body)).toEqual([400, 'ValidationError']);
    }
  });

  it('at most 20 active keys per organisation, also when created concurrently; a revoked or expired key frees a place', async () => {
    const own = await createOrganization();
    const token = await memberToken(app, own, 'owner');
    const results = await Promise.all(Array.from({ length: 24 }, (_, i) => create(token, { name: `k${i}`, scopes: ['payments:read'] }, own.id)));
    expect(results.filter((r) => r.status === 201)).toHaveLength(20);
    for (const refused of results.filter((r) => r.status !== 201)) expect([refused.status, refused.body.error]).toEqual([422, 'TooManyApiKeys']);
    const first = results.find((r) => r.status === 201)?.body.data.id as string;
    expect((await request(app).delete(`${keysPath(own.id)}/${first}`).set(bearer(token))).status).toBe(200);
    expect((await create(token, { name: 'again', scopes: ['payments:read'] }, own.id)).status).toBe(201);
    expect((await create(token, { name: 'over', scopes: ['payments:read'] }, own.id)).status).toBe(422);
  });
});

describe('GET, DELETE and roll', () => {
  it('an unknown key, or a key of another organisation, is 404 ApiKeyNotFound', async () => {
    const other = await createOrganization();
    const foreign = await createApiKey(app, other, ['payments:read']);
    for (const id of [foreign.id, '00000000-0000-4000-8000-000000000000']) {
      for (const call of [
        request(app).get(`${keysPath(org.id)}/${id}`),
        request(app).delete(`${keysPath(org.id)}/${id}`),
        request(app).post(`${keysPath(org.id)}/${id}/roll`).send({}),
      ]) {
        const res = await call.set(bearer(owner));
        expect([res.status, res.body.error]).toEqual([404, 'ApiKeyNotFound']);
      }
    }
  });

  it('DELETE revokes at once (401 from then on) and records api_key.revoked once', async () => {
    const key = await createApiKey(app, org, ['payments:read']);
    expect((await request(app).get(`${businessPath(org.id)}/payments`).set(key.auth)).status).toBe(200);
    const res = await request(app).delete(`${keysPath(org.id)}/${key.id}`).set(bearer(owner));
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe('revoked');
    const after = await request(app).get(`${businessPath(org.id)}/payments`).set(key.auth);
    expect([after.status, after.body.error, after.body.message]).toEqual([401, 'Unauthorized', 'The API key is revoked.']);
    const again = await request(app).delete(`${keysPath(org.id)}/${key.id}`).set(bearer(owner));
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(res.body.data);
    expect((await eventsOf(key.id)).map((e) => e.type)).toEqual(['api_key.created', 'api_key.revoked']);
    const roll = await request(app).post(`${keysPath(org.id)}/${key.id}/roll`).set(bearer(owner)).send({});
    expect([roll.status, roll.body.error]).toEqual([409, 'ApiKeyNotActive']);
  });

  it('roll: a new secret once; the old one works until expire_current_in_seconds, then 401; the key keeps its id and scopes', async () => {
    const key = await createApiKey(app, org, ['payments:read']);
    const payments = `${businessPath(org.id)}/payments`;
    const res = await request(app).post(`${keysPath(org.id)}/${key.id}/roll`).set(bearer(owner)).send({ expire_current_in_seconds: 3600 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const rolled = res.body.data;
    expect(rolled.secret).toMatch(KEY_FORMAT);
    expect(rolled.secret).not.toBe(key.secret);
    expect(rolled).toMatchObject({ id: key.id, scopes: ['payments:read'], status: 'active', last4: rolled.secret.slice(-4) });
    expect(rolled.prefix).toBe(rolled.secret.slice(0, 20));
    expect((await request(app).get(payments).set(key.auth)).status).toBe(200);
    expect((await request(app).get(payments).set(bearer(rolled.secret))).status).toBe(200);
    clockMs += 3600_000;
    try {
      const old = await request(app).get(payments).set(key.auth);
      expect([old.status, old.body.error]).toEqual([401, 'Unauthorized']);
      expect((await request(app).get(payments).set(bearer(rolled.secret))).status).toBe(200);
    } finally {
      clockMs -= 3600_000;
    }
    const events = await eventsOf(key.id);
    expect(events.map((e) => [e.type, e.actor_user_id])).toEqual([
      ['api_key.created', key.creator.id],
      ['api_key.rolled', ownerId],
    ]);
  });

  it('roll with expire_current_in_seconds 0 stops the old secret at once; the default keeps it a day; the bounds are the contract’s', async () => {
    const key = await createApiKey(app, org, ['payments:read']);
    const payments = `${businessPath(org.id)}/payments`;
    const res = await request(app).post(`${keysPath(org.id)}/${key.id}/roll`).set(bearer(owner)).send({ expire_current_in_seconds: 0 });
    expect(res.status).toBe(200);
    expect((await request(app).get(payments).set(key.auth)).status).toBe(401);
    const next = await request(app).post(`${keysPath(org.id)}/${key.id}/roll`).set(bearer(owner));
    expect(next.status).toBe(200);
    expect((await request(app).get(payments).set(bearer(res.body.data.secret))).status).toBe(200);
    clockMs += 86_400_000 - 1000;
    try {
      expect((await request(app).get(payments).set(bearer(res.body.data.secret))).status).toBe(200);
      clockMs += 1000;
      expect((await request(app).get(payments).set(bearer(res.body.data.secret))).status).toBe(401);
    } finally {
      clockMs -= 86_400_000;
    }
    for (const seconds of [-1, 604_801, 1.5]) {
      const bad = await request(app).post(`${keysPath(org.id)}/${key.id}/roll`).set(bearer(owner)).send({ expire_current_in_seconds: seconds });
      expect([bad.status, bad.body.error]).toEqual([400, 'ValidationError']);
    }
  });

  it('last_used_at and last_used_ip are written on first use, then at most once a minute', async () => {
    const key = await createApiKey(app, org, ['payments:read']);
    const payments = `${businessPath(org.id)}/payments`;
    const lastUsed = async () => (await testKnex()('api_keys').where({ id: key.id }).first()) as { last_used_at: Date | null; last_used_ip: string | null };
    expect((await lastUsed()).last_used_at).toBeNull();
    await request(app).get(payments).set(key.auth);
    const first = await lastUsed();
    expect(first.last_used_at?.getTime()).toBe(clockMs);
    expect(first.last_used_ip).toMatch(/^[0-9a-f.:]+$/);
    clockMs += 59_000;
    try {
      await request(app).get(payments).set(key.auth);
      expect((await lastUsed()).last_used_at?.getTime()).toBe(first.last_used_at?.getTime());
      clockMs += 1_000;
      await request(app).get(payments).set(key.auth);
      expect((await lastUsed()).last_used_at?.getTime()).toBe(clockMs);
      const shown = await request(app).get(`${keysPath(org.id)}/${key.id}`).set(bearer(owner));
      expect(shown.body.data.last_used_at).toBe(new Date(clockMs).toISOString());
    } finally {
      clockMs -= 60_000;
    }
  });

  it('a key manages neither keys nor members: every key route answers 403 ApiKeyNotAllowed to a key, whatever its scopes', async () => {
    const key = await createApiKey(app, org, API_KEY_SCOPES);
    const target = await createApiKey(app, org, ['payments:read']);
    const calls = [
      request(app).get(keysPath(org.id)),
      request(app).post(keysPath(org.id)).send({ name: 'x', scopes: ['payments:read'] }),
      request(app).get(`${keysPath(org.id)}/${target.id}`),
      request(app).delete(`${keysPath(org.id)}/${target.id}`),
      request(app).post(`${keysPath(org.id)}/${target.id}/roll`).send({}),
    ];
    for (const call of calls) {
      const res = await call.set(key.auth);
      expect([res.status, res.body.error]).toEqual([403, 'ApiKeyNotAllowed']);
    }
    expect((await request(app).get(`${businessPath(org.id)}/payments`).set(target.auth)).status).toBe(200);
  });
});
