import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_VERSION, NetworkStatusService, isStoreTimeout } from '../../src/modules/network-status';
import { buildTestApp, type App } from '../support/app';
import { databaseKind, testKnex } from '../support/database';
import { accessTokenFor, bearer, createMember, createOrganization, memberToken } from '../support/factories';

let app: App;

const url = (orgId: string) => `/api/business/organizations/${orgId}/network-status`;

async function auditCount(orgId: string): Promise<number> {
  const row = await testKnex()('network_status_changes').where({ organization_id: orgId }).count<{ count: string }[]>('* as count');
  return Number(row[0]?.count);
}

beforeAll(async () => {
  app = await buildTestApp();
});

describe('GET /business/organizations/{orgId}/network-status', () => {
  it('reads as never set before the first change, with can_manage for owners and admins only', async () => {
    const org = await createOrganization();
    for (const [role, canManage] of [
      ['owner', true],
      ['admin', true],
      ['representative', false],
      ['director', false],
      ['finance_manager', false],
    ] as const) {
      const res = await request(app).get(url(org.id)).set(bearer(await memberToken(app, org, role)));
      expect(res.status, role).toBe(200);
      expect(res.body).toEqual({
        success: true,
        data: { is_open: null, is_visible: false, version: 0, can_manage: canManage, updated_at: null, updated_by: null },
      });
    }
  });

  it('refuses cashiers (403), strangers (404) and anonymous callers (401)', async () => {
    const org = await createOrganization();
    const cashier = await request(app).get(url(org.id)).set(bearer(await memberToken(app, org, 'cashier')));
    expect(cashier.status).toBe(403);
    expect(cashier.body.error).toBe('InsufficientRole');
    const stranger = await request(app).get(url(org.id)).set(bearer(await memberToken(app, await createOrganization(), 'owner')));
    expect(stranger.status).toBe(404);
    expect((await request(app).get(url(org.id))).status).toBe(401);
  });

  it('answers 429 RateLimitExceeded with Retry-After once the caller exceeds the limit', async () => {
    const limited = await buildTestApp({ env: { RATE_LIMIT_AUTHENTICATED: '3' } });
    const org = await createOrganization();
    const token = await accessTokenFor(limited, await createMember(org, 'owner'));
    for (let i = 0; i < 3; i += 1) expect((await request(limited).get(url(org.id)).set(bearer(token))).status).toBe(200);
    const res = await request(limited).get(url(org.id)).set(bearer(token));
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({ success: false, error: 'RateLimitExceeded' });
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('can_manage is false for an owner of an inactive organisation', async () => {
    const org = await createOrganization({ status: 'inactive' });
    const res = await request(app).get(url(org.id)).set(bearer(await memberToken(app, org, 'owner')));
    expect(res.status).toBe(200);
    expect(res.body.data.can_manage).toBe(false);
  });
});

describe('PATCH /business/organizations/{orgId}/network-status', () => {
  it('changes is_open, bumps the version, records who and when, audits, and never touches is_visible or the address', async () => {
    const org = await createOrganization();
    const owner = await createMember(org, 'owner');
    const token = await accessTokenFor(app, owner);
    await testKnex()('organization_network_status').insert({ organization_id: org.id, is_visible: true, public_address: '12 rue du Commerce, Abidjan', version: 4 });

    const res = await request(app).patch(url(org.id)).set(bearer(token)).set('X-Request-Id', 'req-network-status-1').send({ version: 4, is_open: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ is_open: true, is_visible: true, version: 5, can_manage: true, updated_by: owner.id });
    expect(res.body.data.updated_at).not.toBeNull();

    const row = await testKnex()('organization_network_status').where({ organization_id: org.id }).first();
    expect(row).toMatchObject({ is_open: true, is_visible: true, public_address: '12 rue du Commerce, Abidjan', version: 5 });

    const cleared = await request(app).patch(url(org.id)).set(bearer(token)).send({ version: 5, is_open: null });
    expect(cleared.body.data).toMatchObject({ is_open: null, version: 6, is_visible: true });

    const history = await request(app).get(`${url(org.id)}/history`).set(bearer(token));
    expect(history.status, JSON.stringify(history.body)).toBe(200);
    expect(history.body.data.data).toHaveLength(2);
    expect(history.body.data.data[0]).toMatchObject({ actor_user_id: owner.id, before: { is_open: true, version: 5 }, after: { is_open: null, version: 6 } });
    expect(history.body.data.data[1]).toMatchObject({
      actor_user_id: owner.id,
      before: { is_open: null, version: 4 },
      after: { is_open: true, version: 5 },
      request_id: 'req-network-status-1',
    });
  });

  it('works on an organisation that never had a status (version 0)', async () => {
    const org = await createOrganization();
    const token = await memberToken(app, org, 'admin');
    const res = await request(app).patch(url(org.id)).set(bearer(token)).send({ version: 0, is_open: false });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ is_open: false, version: 1, is_visible: false });
  });

  it('answers 409 VersionConflict for a stale version, changing nothing and auditing nothing', async () => {
    const org = await createOrganization();
    const token = await memberToken(app, org, 'owner');
    await request(app).patch(url(org.id)).set(bearer(token)).send({ version: 0, is_open: true });
    for (const version of [0, 2, 7]) {
      const res = await request(app).patch(url(org.id)).set(bearer(token)).send({ version, is_open: false });
      expect(res.status).toBe(409);
      expect(res.body.error).toBe('VersionConflict');
      expect(res.body.message).toMatch(/read it again/);
    }
    const now = await request(app).get(url(org.id)).set(bearer(token));
    expect(now.body.data).toMatchObject({ is_open: true, version: 1 });
    expect(await auditCount(org.id)).toBe(1);
  });

  it('50 concurrent PATCHes with the same version: exactly one 200, the rest 409, the version moves by one, one audit record', async () => {
    const org = await createOrganization();
    const token = await memberToken(app, org, 'owner');
    await request(app).patch(url(org.id)).set(bearer(token)).send({ version: 0, is_open: false });
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => request(app).patch(url(org.id)).set(bearer(token)).send({ version: 1, is_open: i % 2 === 0 })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(49);
    const winner = results.find((r) => r.status === 200);
    const now = await request(app).get(url(org.id)).set(bearer(token));
    expect(now.body.data.version).toBe(2);
    expect(now.body.data.is_open).toBe(winner?.body.data.is_open);
    expect(await auditCount(org.id)).toBe(2);
  });

  it('concurrent first changes (version 0, no row yet) also let exactly one through', async () => {
    const org = await createOrganization();
    const token = await memberToken(app, org, 'admin');
    const results = await Promise.all(Array.from({ length: 20 }, () => request(app).patch(url(org.id)).set(bearer(token)).send({ version: 0, is_open: true })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(19);
    expect((await request(app).get(url(org.id)).set(bearer(token))).body.data.version).toBe(1);
    expect(await auditCount(org.id)).toBe(1);
  });

  it.each([
    ['a missing is_open', { version: 0 }, 'body.is_open'],
    ['a missing version', { is_open: true }, 'body.version'],
    ['an additional property', { version: 0, is_open: true, is_visible: false }, 'body.is_visible'],
    ['a version above the range', { version: 2147483647, is_open: true }, 'body.version'],
    ['a negative version', { version: -1, is_open: true }, 'body.version'],
    ['a fractional version', { version: 1.5, is_open: true }, 'body.version'],
    ['a string is_open', { version: 0, is_open: 'yes' }, 'body.is_open'],
  ])('answers 422 ValidationError (not 400) for %s', async (_name, body, field) => {
    const org = await createOrganization();
    const token = await memberToken(app, org, 'owner');
    const res = await request(app).patch(url(org.id)).set(bearer(token)).send(body);
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body).toMatchObject({ success: false, error: 'ValidationError' });
    expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field);
    expect(await auditCount(org.id)).toBe(0);
  });

  it('answers 422 for an unknown query parameter and for malformed JSON (this route documents no 400)', async () => {
    const org = await createOrganization();
    const token = await memberToken(app, org, 'owner');
    const query = await request(app).patch(`${url(org.id)}?force=1`).set(bearer(token)).send({ version: 0, is_open: true });
    expect(query.status).toBe(422);
    const malformed = await request(app).patch(url(org.id)).set(bearer(token)).set('Content-Type', 'application/json').send('{"version": 0,');
    expect(malformed.status, JSON.stringify(malformed.body)).toBe(422);
    expect(malformed.body).toEqual({
      success: false,
      error: 'ValidationError',
      message: 'The request body is not valid JSON.',
      details: [{ field: 'body', message: 'malformed JSON' }],
    });
    // Routing is strict: with a trailing slash the path is another, unknown one.
    const slashed = await request(app).patch(`${url(org.id)}/`).set(bearer(token)).set('Content-Type', 'application/json').send('{"version": 0,');
    expect(slashed.status).toBe(404);
    expect(slashed.body).toMatchObject({ success: false, error: 'NotFound' });
    expect(await auditCount(org.id)).toBe(0);
  });

  it('malformed JSON keeps 400 on operations that declare no other validation status', async () => {
    const org = await createOrganization();
    const token = await memberToken(app, org, 'owner');
    const other = await request(app).post(`/api/business/organizations/${org.id}/invoices`).set(bearer(token)).set('Content-Type', 'application/json').send('{"kind":');
    expect(other.status).toBe(400);
    expect(other.body.error).toBe('ValidationError');
  });

  it('answers 401 without a valid token and 404 for a foreign, unknown or malformed organisation id, changing nothing', async () => {
    const org = await createOrganization();
    await testKnex()('organization_network_status').insert({ organization_id: org.id, version: 2, is_open: false });
    const anonymous = await request(app).patch(url(org.id)).send({ version: 2, is_open: true });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toMatchObject({ success: false, error: 'Unauthorized' });
    expect(anonymous.headers['www-authenticate']).toMatch(/^Bearer/);
    const badToken = await request(app).patch(url(org.id)).set('Authorization', 'Bearer not-a-token').send({ version: 2, is_open: true });
    expect(badToken.status).toBe(401);

    const strangerToken = await memberToken(app, await createOrganization(), 'owner');
    for (const orgId of [org.id, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const res = await request(app).patch(url(orgId)).set(bearer(strangerToken)).send({ version: 2, is_open: true });
      expect(res.status, orgId).toBe(404);
      expect(res.body.success).toBe(false);
    }
    const row = await testKnex()('organization_network_status').where({ organization_id: org.id }).first();
    expect(row).toMatchObject({ version: 2, is_open: false });
    expect(await auditCount(org.id)).toBe(0);
  });

  it('keeps 400 for validation errors of other operations', async () => {
    const org = await createOrganization();
    const res = await request(app).get(`/api/business/organizations/${org.id}/invoices?limit=0`).set(bearer(await memberToken(app, org, 'owner')));
    expect(res.status).toBe(400);
  });

  it('answers 422 OrganizationInactive for an inactive organisation', async () => {
    const org = await createOrganization({ status: 'inactive' });
    const res = await request(app).patch(url(org.id)).set(bearer(await memberToken(app, org, 'owner'))).send({ version: 0, is_open: true });
    expect(res.status).toBe(422);
    expect(res.body.error).toBe('OrganizationInactive');
  });

  it('only owners and admins may change it', async () => {
    const org = await createOrganization();
    for (const role of ['representative', 'director', 'finance_manager', 'cashier'] as const) {
      const res = await request(app).patch(url(org.id)).set(bearer(await memberToken(app, org, role))).send({ version: 0, is_open: true });
      expect(res.status, role).toBe(403);
    }
    expect(await auditCount(org.id)).toBe(0);
  });

  it('never wraps: at version 2147483646 a change answers 422 VersionExhausted', async () => {
    const org = await createOrganization();
    const token = await memberToken(app, org, 'owner');
    await testKnex()('organization_network_status').insert({ organization_id: org.id, version: MAX_VERSION - 1, is_open: true });
    const last = await request(app).patch(url(org.id)).set(bearer(token)).send({ version: MAX_VERSION - 1, is_open: false });
    expect(last.status).toBe(200);
    expect(last.body.data.version).toBe(MAX_VERSION);
    const exhausted = await request(app).patch(url(org.id)).set(bearer(token)).send({ version: MAX_VERSION, is_open: true });
    expect(exhausted.status).toBe(422);
    expect(exhausted.body.error).toBe('VersionExhausted');
    const stale = await request(app).patch(url(org.id)).set(bearer(token)).send({ version: 3, is_open: true });
    expect(stale.status).toBe(409);
    expect((await request(app).get(url(org.id)).set(bearer(token))).body.data).toMatchObject({ is_open: false, version: MAX_VERSION });
  });

  it('a stale PATCH at the last version 2147483646 answers 409 VersionConflict (not 422) while the counter is below it', async () => {
    const org = await createOrganization();
    const token = await memberToken(app, org, 'owner');
    const never = await request(app).patch(url(org.id)).set(bearer(token)).send({ version: 2147483646, is_open: true });
    expect(never.status).toBe(409);
    expect(never.body).toMatchObject({ success: false, error: 'VersionConflict', message: expect.stringMatching(/read it again/) });
    await request(app).patch(url(org.id)).set(bearer(token)).send({ version: 0, is_open: true });
    const stale = await request(app).patch(url(org.id)).set(bearer(token)).send({ version: 2147483646, is_open: false });
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({ success: false, error: 'VersionConflict' });
    expect((await request(app).get(url(org.id)).set(bearer(token))).body.data).toMatchObject({ is_open: true, version: 1 });
    expect(await auditCount(org.id)).toBe(1);
  });

  it('at the exhausted counter the refusal names the maximum', async () => {
    const org = await createOrganization();
    const token = await memberToken(app, org, 'admin');
    await testKnex()('organization_network_status').insert({ organization_id: org.id, version: 2147483646, is_open: true });
    const exhausted = await request(app).patch(url(org.id)).set(bearer(token)).send({ version: 2147483646, is_open: false });
    expect(exhausted.status).toBe(422);
    expect(exhausted.body).toEqual({
      success: false,
      error: 'VersionExhausted',
      message: 'The status version reached its maximum (2147483646) and never wraps; no further change is accepted.',
      details: { max_version: 2147483646 },
    });
    expect(await auditCount(org.id)).toBe(0);
  });

  /**
   * Makes the organisation's status row unavailable the way a lock held elsewhere does. On
   * PostgreSQL a second connection really holds the row lock (FOR UPDATE) until released, so
   * the PATCH's lock_timeout fires. The embedded back-end serves one connection, where a second
   * transaction cannot exist: there a temporary trigger on that row raises the very error a
   * lock timeout raises (SQLSTATE 55P03) when the PATCH updates it. Released either way.
   */
  async function holdStatusRow(organizationId: string): Promise<() => Promise<void>> {
    if (databaseKind() === 'postgres') {
      const trx = await testKnex().transaction();
      await trx('organization_network_status').where({ organization_id: organizationId }).forUpdate().first();
      return async () => {
        await trx.rollback();
      };
    }
    const name = `test_status_locked_${organizationId.replace(/-/g, '')}`;
    await testKnex().raw(
      `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'canceling statement due to lock timeout' USING ERRCODE = '55P03'; END $$`,
    );
    await testKnex().raw(
      `CREATE TRIGGER ${name} BEFORE UPDATE ON organization_network_status FOR EACH ROW WHEN (OLD.organization_id = '${organizationId}') EXECUTE FUNCTION ${name}()`,
    );
    return async () => {
      await testKnex().raw(`DROP TRIGGER ${name} ON organization_network_status`);
      await testKnex().raw(`DROP FUNCTION ${name}()`);
    };
  }

  it('answers 503 StatusUnavailable with Retry-After when the status row cannot be locked in time (PostgreSQL: a real lock held elsewhere; embedded: a trigger raising 55P03, the lock_not_available error), changing and auditing nothing', async () => {
    const slowApp = await buildTestApp({ env: { NETWORK_STATUS_LOCK_TIMEOUT_MS: '200', NETWORK_STATUS_RETRY_AFTER_SECONDS: '2' } });
    const org = await createOrganization();
    const token = await accessTokenFor(slowApp, await createMember(org, 'owner'));
    await testKnex()('organization_network_status').insert({ organization_id: org.id, version: 3, is_open: false });
    const release = await holdStatusRow(org.id);
    try {
      const started = Date.now();
      const res = await request(slowApp).patch(url(org.id)).set(bearer(token)).send({ version: 3, is_open: true });
      expect(res.status, JSON.stringify(res.body)).toBe(503);
      expect(res.body).toEqual({ success: false, error: 'StatusUnavailable', message: expect.any(String) });
      expect(res.headers['retry-after']).toBe('2');
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await release();
    }
    expect(await auditCount(org.id)).toBe(0);
    expect(await testKnex()('organization_network_status').where({ organization_id: org.id }).first('version', 'is_open')).toEqual({ version: 3, is_open: false });
    const after = await request(slowApp).patch(url(org.id)).set(bearer(token)).send({ version: 3, is_open: true });
    expect(after.status).toBe(200);
    expect(after.body.data.version).toBe(4);
    expect(await auditCount(org.id)).toBe(1);
  });

  it('maps lock and statement timeouts (55P03, 57014) and pool timeouts to StatusUnavailable, nothing else', async () => {
    expect(isStoreTimeout({ code: '55P03' })).toBe(true);
    expect(isStoreTimeout({ code: '57014' })).toBe(true);
    expect(isStoreTimeout({ name: 'KnexTimeoutError' })).toBe(true);
    expect(isStoreTimeout({ code: '23505' })).toBe(false);
    expect(isStoreTimeout(new Error('x'))).toBe(false);
    const failing = { transaction: () => Promise.reject(Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' })) };
    const service = new NetworkStatusService(failing as never, { retryAfterSeconds: 3 });
    await expect(service.update({ id: 'x', status: 'active', role: 'owner' }, 'u', { version: 0, isOpen: true }, null)).rejects.toMatchObject({
      code: 'StatusUnavailable',
      headers: { 'Retry-After': '3' },
    });
  });
});

describe('GET /business/organizations/{orgId}/network-status/history', () => {
  it('pages newest first with a cursor, for owners and admins only', async () => {
    const org = await createOrganization();
    const token = await memberToken(app, org, 'owner');
    for (let v = 0; v < 5; v += 1) {
      expect((await request(app).patch(url(org.id)).set(bearer(token)).send({ version: v, is_open: v % 2 === 0 })).status).toBe(200);
    }
    const first = await request(app).get(`${url(org.id)}/history?limit=2`).set(bearer(token));
    expect(first.body.data.data.map((c: { after: { version: number } }) => c.after.version)).toEqual([5, 4]);
    expect(first.body.data.has_more).toBe(true);
    const rest = await request(app).get(`${url(org.id)}/history?limit=10&starting_after=${first.body.data.next_cursor}`).set(bearer(token));
    expect(rest.body.data.data.map((c: { after: { version: number } }) => c.after.version)).toEqual([3, 2, 1]);
    expect(rest.body.data.has_more).toBe(false);

    const admin = await request(app).get(`${url(org.id)}/history`).set(bearer(await memberToken(app, org, 'admin')));
    expect(admin.status).toBe(200);
    for (const role of ['representative', 'director', 'finance_manager', 'cashier'] as const) {
      const res = await request(app).get(`${url(org.id)}/history`).set(bearer(await memberToken(app, org, role)));
      expect(res.status, role).toBe(403);
    }
    const other = await createOrganization();
    const foreignCursor = await request(app).get(`${url(org.id)}/history?starting_after=${first.body.data.data[0].id}`).set(bearer(await memberToken(app, other, 'owner')));
    expect(foreignCursor.status).toBe(404);
    const badCursor = await request(app).get(`${url(org.id)}/history?starting_after=00000000-0000-4000-8000-000000000000`).set(bearer(token));
    expect(badCursor.status).toBe(400);
    expect((await request(app).get(`${url(org.id)}/history?limit=501`).set(bearer(token))).status).toBe(400);
  });
});
