import { Webhook } from 'standardwebhooks';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { TINY_PDF } from '../support/contract-requests';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, businessPath, createUser } from '../support/factories';
import { Receiver } from '../support/webhook-receiver';

/**
 * An organisation's own changes reach its webhook endpoints like any other event: an endpoint
 * subscribed to `organization.*` receives, signed, the events of the organisation, its members,
 * its invitations and its verification, each with its actor.
 */
let app: App;
const hook = new Receiver();

beforeAll(async () => {
  app = await buildTestApp();
  await hook.start();
});

afterAll(async () => {
  await hook.close();
});

/** Attempts the endpoint's due deliveries, oldest first (as the dispatcher would, without touching other tests' rows). */
async function deliverDue(endpointId: string): Promise<void> {
  const due = (await testKnex()('webhook_deliveries').where({ endpoint_id: endpointId, status: 'pending' }).orderBy('created_at')) as { id: string }[];
  for (const row of due) await app.services.webhooks.deliver(row.id);
}

interface Delivered {
  type: string;
  object_type: string;
  actor_user_id: string | null;
  data: { object: { id?: string; user_id?: string; verification?: { status: string } }; previous_status: string | null; previous_role?: string };
}

describe('an endpoint subscribed to organization.*', () => {
  it('receives the organisation’s, its members’ and its verification’s events, signed, with their actors', async () => {
    const owner = await createUser();
    const ownerAuth = bearer(await accessTokenFor(app, owner));
    const opened = await request(app)
      .post('/api/business/organizations')
      .set(ownerAuth)
      .send({ legal_name: 'Hooked SARL', country: 'CI', registration_number: 'CI-ABJ-HOOK-0000', legal_form: 'company', default_currency: 'XOF' });
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    const orgId = opened.body.data.id as string;
    const endpoint = await request(app).post(`${businessPath(orgId)}/webhook-endpoints`).set(ownerAuth).send({ url: hook.url, events: ['organization.*'] });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);

    expect((await request(app).patch(businessPath(orgId)).set(ownerAuth).send({ trading_name: 'Hooked' })).status).toBe(200);
    const colleague = await createUser();
    const invitation = await request(app).post(`${businessPath(orgId)}/invitations`).set(ownerAuth).send({ identifier: colleague.email, role: 'director' });
    expect(invitation.status).toBe(201);
    expect((await request(app).post(`/api/me/organization-invitations/${invitation.body.data.id}/accept`).set(bearer(await accessTokenFor(app, colleague)))).status).toBe(200);
    expect((await request(app).patch(`${businessPath(orgId)}/members/${colleague.id}`).set(ownerAuth).send({ role: 'representative' })).status).toBe(200);
    await testKnex()('users').where({ id: colleague.id }).update({ tier: 'tier_2' });
    const verified = await request(app).post(`${businessPath(orgId)}/verification`).set(ownerAuth).field('representative_user_id', colleague.id).attach('registration_document', TINY_PDF, 'registration.pdf');
    expect(verified.body.data.verification.status).toBe('verified');
    await deliverDue(endpoint.body.data.id as string);

    const secret = endpoint.body.data.secret as string;
    const received = hook.requests.map((got) => new Webhook(secret).verify(got.body, got.headers as Record<string, string>) as Delivered);
    expect(received.map((e) => [e.type, e.object_type, e.actor_user_id])).toEqual([
      ['organization.updated', 'organization', owner.id],
      ['organization.member_invited', 'organization_invitation', owner.id],
      ['organization.member_joined', 'organization_member', colleague.id],
      ['organization.member_role_changed', 'organization_member', owner.id],
      ['organization.verification_updated', 'organization', owner.id],
      ['organization.verification_updated', 'organization', null],
    ]);
    expect(received[2]?.data.object.user_id).toBe(colleague.id);
    expect(received[3]?.data).toMatchObject({ previous_role: 'director', object: { role: 'representative' } });
    expect(received.slice(4).map((e) => e.data.object.verification?.status)).toEqual(['pending', 'verified']);
    // organization.created is recorded before any endpoint of the organisation can exist: it is in the events, never delivered.
    const created = await request(app).get(`${businessPath(orgId)}/events`).query({ type: 'organization.created' }).set(ownerAuth);
    expect(created.body.data.data.map((e: { actor_user_id: string }) => e.actor_user_id)).toEqual([owner.id]);
  });
});
