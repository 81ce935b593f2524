import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { createApiKey, type TestApiKey } from '../support/api-keys';
import { testKnex } from '../support/database';
import { revokeKeysOfHoldersWithoutAccess } from '../../src/db/migrations/20261129150000_api_keys_closed_holders';
import { accessTokenFor, bearer, businessPath, createMember, createOrganization, type TestOrganization, type TestUser } from '../support/factories';

/**
 * A key must not outlive the trust placed in whoever holds it: when its holder may no longer
 * create keys in the organisation (disabled, membership suspended or removed, demoted below
 * admin), the key is revoked in the same transaction as that change, whoever makes it (operator
 * SQL or the member routes), with `api_key.revoked` naming the reason. A key an owner or admin
 * took over first keeps working.
 */
let app: App;

beforeAll(async () => {
  app = await buildTestApp();
});

interface Setup {
  org: TestOrganization;
  owner: TestUser;
  ownerToken: string;
  admin: TestUser;
  key: TestApiKey;
}

async function setup(): Promise<Setup> {
  const org = await createOrganization();
  const owner = await createMember(org, 'owner');
  const admin = await createMember(org, 'admin');
  const key = await createApiKey(app, org, ['accounts:read', 'members:read'], { creator: admin });
  return { org, owner, ownerToken: await accessTokenFor(app, owner), admin, key };
}

const useKey = (s: Setup) => request(app).get(`${businessPath(s.org.id)}/accounts`).set(s.key.auth);

async function revocationEvents(keyId: string) {
  return testKnex()('events').where({ subject_type: 'api_key', subject_id: keyId, type: 'api_key.revoked' }).orderBy('sequence');
}

async function expectRevokedForLostAccess(s: Setup, actor: string | null): Promise<void> {
  const res = await useKey(s);
  expect(res.status).toBe(401);
  expect(res.body.message).toBe('The API key is revoked.');
  const events = await revocationEvents(s.key.id);
  expect(events).toHaveLength(1);
  expect(events[0]).toMatchObject({ actor_user_id: actor, organization_id: s.org.id });
  expect(events[0].payload).toMatchObject({ reason: 'creator_lost_access', holder_user_id: s.admin.id });
  expect(events[0].data.object).toMatchObject({ id: s.key.id, status: 'revoked', revoked_reason: 'creator_lost_access', held_by: s.admin.id, created_by: s.admin.id });
  expect(events[0].data.previous_status).toBe('active');
  const shown = await request(app).get(`${businessPath(s.org.id)}/api-keys/${s.key.id}`).set(bearer(s.ownerToken));
  expect(shown.body.data).toMatchObject({ status: 'revoked', revoked_reason: 'creator_lost_access' });
  const listed = await request(app).get(`${businessPath(s.org.id)}/events?type=api_key.revoked`).set(bearer(s.ownerToken));
  expect(listed.body.data.data[0]).toMatchObject({ object_id: s.key.id, actor_user_id: actor, data: { object: { revoked_reason: 'creator_lost_access' } } });
}

describe('changes made by operators in SQL', () => {
  it('a disabled creator: the key answers 401 and its revocation names creator_lost_access', async () => {
    const s = await setup();
    expect((await useKey(s)).status).toBe(200);
    await testKnex()('users').where({ id: s.admin.id }).update({ status: 'disabled' });
    await expectRevokedForLostAccess(s, null);
  });

  it('a holder who had lost access before revocations followed it: the sweep revokes their keys, and only theirs', async () => {
    const s = await setup();
    const kept = await setup();
    const knex = testKnex();
    await knex.raw('ALTER TABLE memberships DISABLE TRIGGER memberships_api_keys_creator_lost_access');
    try {
      await knex('memberships').where({ organization_id: s.org.id, user_id: s.admin.id }).update({ role: 'cashier' });
    } finally {
      await knex.raw('ALTER TABLE memberships ENABLE TRIGGER memberships_api_keys_creator_lost_access');
    }
    expect((await useKey(s)).status).toBe(200);
    await revokeKeysOfHoldersWithoutAccess(knex);
    await expectRevokedForLostAccess(s, null);
    expect((await useKey(kept)).status).toBe(200);
    await revokeKeysOfHoldersWithoutAccess(knex);
    expect(await revocationEvents(s.key.id)).toHaveLength(1);
  });

  it('a suspended membership: 401, reason creator_lost_access', async () => {
    const s = await setup();
    await testKnex()('memberships').where({ organization_id: s.org.id, user_id: s.admin.id }).update({ status: 'suspended' });
    await expectRevokedForLostAccess(s, null);
  });

  it('a creator demoted below admin: 401, reason creator_lost_access; a demotion from owner to admin keeps the keys', async () => {
    const s = await setup();
    await testKnex()('memberships').where({ organization_id: s.org.id, user_id: s.admin.id }).update({ role: 'cashier' });
    await expectRevokedForLostAccess(s, null);
    const ownerKey = await createApiKey(app, s.org, ['accounts:read'], { creator: s.owner });
    await testKnex()('memberships').where({ organization_id: s.org.id, user_id: s.owner.id }).update({ role: 'admin' });
    expect((await request(app).get(`${businessPath(s.org.id)}/accounts`).set(ownerKey.auth)).status).toBe(200);
  });

  it('the revocation belongs to the change: a change rolled back revokes nothing', async () => {
    const s = await setup();
    await testKnex()
      .transaction(async (trx) => {
        await trx('users').where({ id: s.admin.id }).update({ status: 'disabled' });
        expect((await trx('api_keys').where({ id: s.key.id }).first('revoked_at')).revoked_at).not.toBeNull();
        throw new Error('rolled back');
      })
      .catch(() => undefined);
    expect((await useKey(s)).status).toBe(200);
    expect(await revocationEvents(s.key.id)).toHaveLength(0);
  });

  it('revokes only the keys of the organisation where the access was lost', async () => {
    const s = await setup();
    const elsewhere = await createOrganization();
    await testKnex()('memberships').insert({ organization_id: elsewhere.id, user_id: s.admin.id, role: 'admin', status: 'active' });
    const otherKey = await createApiKey(app, elsewhere, ['accounts:read'], { creator: s.admin });
    await testKnex()('memberships').where({ organization_id: s.org.id, user_id: s.admin.id }).update({ status: 'suspended' });
    expect((await useKey(s)).status).toBe(401);
    expect((await request(app).get(`${businessPath(elsewhere.id)}/accounts`).set(otherKey.auth)).status).toBe(200);
  });
});

describe('changes made through the member routes', () => {
  it('an admin who closes their account: the keys they hold are revoked with the closing, naming them as its actor', async () => {
    const s = await setup();
    const closed = await request(app).post('/api/me/close').set(bearer(await accessTokenFor(app, s.admin))).send({});
    expect(closed.status, JSON.stringify(closed.body)).toBe(200);
    await expectRevokedForLostAccess(s, s.admin.id);
  });


  it('an admin demoted by the owner: the key answers 401 and the revocation names the owner as its actor', async () => {
    const s = await setup();
    const res = await request(app).patch(`${businessPath(s.org.id)}/members/${s.admin.id}`).set(bearer(s.ownerToken)).send({ role: 'finance_manager' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await expectRevokedForLostAccess(s, s.owner.id);
  });

  it('an admin removed by the owner, or who leaves: the keys they hold are revoked with the removal', async () => {
    const s = await setup();
    const res = await request(app).delete(`${businessPath(s.org.id)}/members/${s.admin.id}`).set(bearer(s.ownerToken));
    expect(res.status).toBe(200);
    await expectRevokedForLostAccess(s, s.owner.id);
    const t = await setup();
    const left = await request(app).delete(`${businessPath(t.org.id)}/members/me`).set(bearer(await accessTokenFor(app, t.admin)));
    expect(left.status).toBe(200);
    await expectRevokedForLostAccess(t, t.admin.id);
  });

  it('a key taken over by the owner first keeps working, answers for the owner, and the transfer is recorded', async () => {
    const s = await setup();
    const transfer = await request(app).post(`${businessPath(s.org.id)}/api-keys/${s.key.id}/transfer`).set(bearer(s.ownerToken));
    expect(transfer.status, JSON.stringify(transfer.body)).toBe(200);
    expect(transfer.body.data).toMatchObject({ id: s.key.id, created_by: s.admin.id, held_by: s.owner.id, status: 'active' });
    const again = await request(app).post(`${businessPath(s.org.id)}/api-keys/${s.key.id}/transfer`).set(bearer(s.ownerToken));
    expect(again.body.data).toEqual(transfer.body.data);
    const transfers = await testKnex()('events').where({ subject_id: s.key.id, type: 'api_key.transferred' });
    expect(transfers).toEqual([expect.objectContaining({ actor_user_id: s.owner.id, organization_id: s.org.id })]);
    const kept = await createApiKey(app, s.org, ['accounts:read'], { creator: s.admin });
    await request(app).patch(`${businessPath(s.org.id)}/members/${s.admin.id}`).set(bearer(s.ownerToken)).send({ role: 'cashier' });
    await testKnex()('users').where({ id: s.admin.id }).update({ status: 'disabled' });
    expect((await useKey(s)).status).toBe(200);
    expect(await revocationEvents(s.key.id)).toHaveLength(0);
    expect((await request(app).get(`${businessPath(s.org.id)}/accounts`).set(kept.auth)).status).toBe(401);
    // The key now acts for the owner: its holder's loss of access revokes it in turn.
    await testKnex()('memberships').where({ organization_id: s.org.id, user_id: s.owner.id }).update({ status: 'suspended' });
    expect((await useKey(s)).status).toBe(401);
  });

  it('only an owner or admin takes a key over; a revoked key cannot be', async () => {
    const s = await setup();
    const finance = await accessTokenFor(app, await createMember(s.org, 'finance_manager'));
    const denied = await request(app).post(`${businessPath(s.org.id)}/api-keys/${s.key.id}/transfer`).set(bearer(finance));
    expect([denied.status, denied.body.error]).toEqual([403, 'InsufficientRole']);
    const byKey = await request(app).post(`${businessPath(s.org.id)}/api-keys/${s.key.id}/transfer`).set(s.key.auth);
    expect([byKey.status, byKey.body.error]).toEqual([403, 'ApiKeyNotAllowed']);
    await request(app).delete(`${businessPath(s.org.id)}/api-keys/${s.key.id}`).set(bearer(s.ownerToken));
    const revoked = await request(app).post(`${businessPath(s.org.id)}/api-keys/${s.key.id}/transfer`).set(bearer(s.ownerToken));
    expect([revoked.status, revoked.body.error]).toEqual([409, 'ApiKeyNotActive']);
    const shown = await request(app).get(`${businessPath(s.org.id)}/api-keys/${s.key.id}`).set(bearer(s.ownerToken));
    expect(shown.body.data.revoked_reason).toBe('revoked');
  });

  it('the revocation reaches the webhook endpoints subscribed to api_key events', async () => {
    const s = await setup();
    const [endpoint] = (await testKnex()('webhook_endpoints')
      .insert({ organization_id: s.org.id, url: 'https://hooks.example.com/k', events: ['api_key.*'], secret: 'whsec_test', status: 'enabled' })
      .returning('id')) as Array<{ id: string }>;
    await testKnex()('users').where({ id: s.admin.id }).update({ status: 'disabled' });
    const [event] = await revocationEvents(s.key.id);
    const deliveries = await testKnex()('webhook_deliveries').where({ event_id: event.id });
    expect(deliveries).toEqual([expect.objectContaining({ endpoint_id: endpoint?.id, organization_id: s.org.id })]);
  });
});
