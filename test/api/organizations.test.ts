import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '../../src/contract';
import { buildTestApp, type App } from '../support/app';
import { createApiKey } from '../support/api-keys';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, businessPath, createMember, createOrganization, createUser, memberToken, type TestUser } from '../support/factories';

const ROLES: Role[] = ['owner', 'admin', 'representative', 'director', 'finance_manager', 'cashier'];
const DAY_MS = 86_400_000;

let clockMs = Date.now();
let app: App;

beforeAll(async () => {
  app = await buildTestApp({ now: () => new Date(clockMs) });
});

const NEW_ORG = { legal_name: 'Baobab Commerce SARL', trading_name: 'Baobab', country: 'CI', registration_number: 'CI-ABJ-2026-B-1', legal_form: 'company', default_currency: 'XOF' };

async function openOrganization(token: string, body: object = NEW_ORG) {
  const res = await request(app).post('/api/business/organizations').set(bearer(token)).send(body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data as { id: string; [key: string]: unknown };
}

async function eventsOf(organizationId: string, type: string) {
  return testKnex()('events').where({ organization_id: organizationId, type }).orderBy('sequence');
}

/** An organisation with one active member per role, and their tokens. */
async function staffedOrganization() {
  const org = await createOrganization();
  const users = new Map<Role, TestUser>();
  const tokens = new Map<Role, string>();
  for (const role of ROLES) {
    const user = await createMember(org, role);
    users.set(role, user);
    tokens.set(role, await accessTokenFor(app, user));
  }
  return { org, users, tokens };
}

describe('opening an organisation', () => {
  it('answers 201; the caller is its owner, it has one account in its default currency, and organization.created names the caller', async () => {
    const user = await createUser();
    const token = await accessTokenFor(app, user);
    const org = await openOrganization(token);
    expect(org).toMatchObject({
      legal_name: 'Baobab Commerce SARL',
      trading_name: 'Baobab',
      country: 'CI',
      registration_number: 'CI-ABJ-2026-B-1',
      legal_form: 'company',
      default_currency: 'XOF',
      status: 'active',
      verification: { status: 'unverified', requirements: { due: ['registration_document', 'representative'], pending: [], errors: [] }, decided_at: null },
      modules: { payment_links: 'open', invoices: 'open', accounts: 'open', network_status: 'open' },
    });
    const me = await request(app).get('/api/me').set(bearer(token));
    expect(me.body.data.organizations).toContainEqual({ id: org.id, name: 'Baobab', status: 'active', role: 'owner' });
    const accounts = await request(app).get(`${businessPath(org.id)}/accounts`).set(bearer(token));
    expect(accounts.status, JSON.stringify(accounts.body)).toBe(200);
    expect(accounts.body.data.data.map((a: { currency_code: string }) => a.currency_code)).toEqual(['XOF']);
    const [event] = await eventsOf(org.id, 'organization.created');
    expect(event).toMatchObject({ actor_user_id: user.id, subject_type: 'organization', subject_id: org.id });
    const listed = await request(app).get(`${businessPath(org.id)}/events?type=organization.created`).set(bearer(token));
    expect(listed.body.data.data[0]).toMatchObject({ type: 'organization.created', actor_user_id: user.id, data: { object: { id: org.id } } });
  });

  it('refuses an unknown currency, a malformed country and a code no country is assigned with a 400 naming the field', async () => {
    const token = await accessTokenFor(app, await createUser());
    const currency = await request(app).post('/api/business/organizations').set(bearer(token)).send({ ...NEW_ORG, default_currency: 'ZZZ' });
    expect(currency.status).toBe(400);
    expect(JSON.stringify(currency.body.details)).toContain('default_currency');
    const country = await request(app).post('/api/business/organizations').set(bearer(token)).send({ ...NEW_ORG, country: 'civ' });
    expect(country.status).toBe(400);
    for (const unassigned of ['ZZ', 'QQ', 'EU']) {
      const res = await request(app).post('/api/business/organizations').set(bearer(token)).send({ ...NEW_ORG, country: unassigned });
      expect([res.status, res.body.details], unassigned).toEqual([400, [{ field: 'body.country', message: `country ${unassigned} is not an ISO 3166-1 alpha-2 country code.` }]]);
    }
    expect((await request(app).post('/api/business/organizations').set(bearer(token)).send({ ...NEW_ORG, country: 'SN' })).status).toBe(201);
  });

  it('refuses API keys (403 ApiKeyNotAllowed)', async () => {
    const org = await createOrganization();
    const key = await createApiKey(app, org, ['members:read']);
    const res = await request(app).post('/api/business/organizations').set(key.auth).send(NEW_ORG);
    expect([res.status, res.body.error]).toEqual([403, 'ApiKeyNotAllowed']);
  });
});

describe('reading and updating the organisation: every role, a non-member, API keys', () => {
  it('GET: any active member and a members:read key; a non-member 404; a key without the scope 403', async () => {
    const { org, tokens } = await staffedOrganization();
    for (const role of ROLES) {
      const res = await request(app).get(businessPath(org.id)).set(bearer(tokens.get(role) as string));
      expect(res.status, role).toBe(200);
      expect(res.body.data.id).toBe(org.id);
    }
    const outsider = await accessTokenFor(app, await createUser());
    expect((await request(app).get(businessPath(org.id)).set(bearer(outsider))).status).toBe(404);
    const reader = await createApiKey(app, org, ['members:read']);
    expect((await request(app).get(businessPath(org.id)).set(reader.auth)).status).toBe(200);
    const other = await createApiKey(app, org, ['payments:read']);
    const refused = await request(app).get(businessPath(org.id)).set(other.auth);
    expect([refused.status, refused.body.error]).toEqual([403, 'InsufficientScope']);
  });

  it('PATCH: owner and admin change the trading name and support contacts (name follows), others 403, keys 403; organization.updated names the actor', async () => {
    const { org, tokens, users } = await staffedOrganization();
    const res = await request(app).patch(businessPath(org.id)).set(bearer(tokens.get('admin') as string)).send({ trading_name: 'Baobab Market', support_email: 'help@baobab.example' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ trading_name: 'Baobab Market', support_email: 'help@baobab.example', support_phone: null });
    const me = await request(app).get('/api/me').set(bearer(tokens.get('owner') as string));
    expect(me.body.data.organizations.find((o: { id: string }) => o.id === org.id).name).toBe('Baobab Market');
    expect((await eventsOf(org.id, 'organization.updated'))[0]).toMatchObject({ actor_user_id: users.get('admin')?.id });
    for (const role of ['representative', 'director', 'finance_manager', 'cashier'] as Role[]) {
      const denied = await request(app).patch(businessPath(org.id)).set(bearer(tokens.get(role) as string)).send({ support_phone: '+2250700009999' });
      expect([denied.status, denied.body.error], role).toEqual([403, 'InsufficientRole']);
    }
    const owner = await request(app).patch(businessPath(org.id)).set(bearer(tokens.get('owner') as string)).send({ support_phone: '+2250700009999' });
    expect(owner.body.data.support_phone).toBe('+2250700009999');
    const key = await createApiKey(app, org, ['members:read']);
    const byKey = await request(app).patch(businessPath(org.id)).set(key.auth).send({ support_phone: null });
    expect([byKey.status, byKey.body.error]).toEqual([403, 'ApiKeyNotAllowed']);
    const legal = await request(app).patch(businessPath(org.id)).set(bearer(tokens.get('owner') as string)).send({ legal_name: 'Other' });
    expect(legal.status).toBe(400);
  });
});

describe('members', () => {
  it('lists members for every role but cashier; identifiers in full for owners and admins, masked for others and keys', async () => {
    const { org, tokens, users } = await staffedOrganization();
    const adminEmail = users.get('admin')?.email as string;
    for (const role of ROLES) {
      const res = await request(app).get(`${businessPath(org.id)}/members`).set(bearer(tokens.get(role) as string));
      if (role === 'cashier') {
        expect([res.status, res.body.error]).toEqual([403, 'InsufficientRole']);
        continue;
      }
      expect(res.status, role).toBe(200);
      expect(res.body.data.data).toHaveLength(6);
      const admin = res.body.data.data.find((m: { user_id: string }) => m.user_id === users.get('admin')?.id);
      expect(admin.identifier, role).toBe(role === 'owner' || role === 'admin' ? adminEmail : `${adminEmail.slice(0, 1)}***${adminEmail.slice(adminEmail.indexOf('@'))}`);
    }
    const reader = await createApiKey(app, org, ['members:read']);
    const byKey = await request(app).get(`${businessPath(org.id)}/members?limit=2`).set(reader.auth);
    expect(byKey.status).toBe(200);
    expect(byKey.body.data.has_more).toBe(true);
    expect(byKey.body.data.data.every((m: { identifier: string }) => m.identifier.includes('***'))).toBe(true);
    const next = await request(app).get(`${businessPath(org.id)}/members?limit=50&starting_after=${byKey.body.data.next_cursor}`).set(reader.auth);
    expect(next.body.data.data).toHaveLength(5);
    const without = await createApiKey(app, org, ['accounts:read']);
    const refused = await request(app).get(`${businessPath(org.id)}/members`).set(without.auth);
    expect([refused.status, refused.body.error]).toEqual([403, 'InsufficientScope']);
    const outsider = await accessTokenFor(app, await createUser());
    expect((await request(app).get(`${businessPath(org.id)}/members`).set(bearer(outsider))).status).toBe(404);
  });

  it('role changes: only an owner grants or takes away owner; an admin cannot change another admin; other roles 403; keys never', async () => {
    const { org, tokens, users } = await staffedOrganization();
    const otherAdmin = await createMember(org, 'admin');
    const patch = (token: string, userId: string, role: Role) => request(app).patch(`${businessPath(org.id)}/members/${userId}`).set(bearer(token)).send({ role });
    const admin = tokens.get('admin') as string;
    expect((await patch(admin, otherAdmin.id, 'cashier')).body.error).toBe('InsufficientRole');
    expect((await patch(admin, users.get('director')?.id as string, 'owner')).body.error).toBe('InsufficientRole');
    expect((await patch(admin, users.get('owner')?.id as string, 'cashier')).body.error).toBe('InsufficientRole');
    for (const role of ['representative', 'director', 'finance_manager', 'cashier'] as Role[]) {
      expect((await patch(tokens.get(role) as string, users.get('cashier')?.id as string, 'director')).status, role).toBe(403);
    }
    const changed = await patch(admin, users.get('cashier')?.id as string, 'finance_manager');
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body.data).toMatchObject({ user_id: users.get('cashier')?.id, role: 'finance_manager', status: 'active' });
    const [event] = await eventsOf(org.id, 'organization.member_role_changed');
    expect(event).toMatchObject({ actor_user_id: users.get('admin')?.id, subject_type: 'organization_member' });
    expect(event.data.object).toMatchObject({ user_id: users.get('cashier')?.id, role: 'finance_manager' });
    expect(event.data.previous_status).toBe('active');
    expect(event.data.previous_role).toBe('cashier');
    const listed = await request(app).get(`${businessPath(org.id)}/events?type=organization.member_role_changed`).set(bearer(tokens.get('owner') as string));
    expect(listed.body.data.data[0].data).toMatchObject({ previous_status: 'active', previous_role: 'cashier', object: { role: 'finance_manager' } });
    const promoted = await patch(tokens.get('owner') as string, otherAdmin.id, 'owner');
    expect(promoted.body.data.role).toBe('owner');
    const unknown = await patch(tokens.get('owner') as string, '6b1f0c2e-8d4a-4f3b-9e7c-2a5d8f1b3c4e', 'cashier');
    expect([unknown.status, unknown.body.error]).toEqual([404, 'MemberNotFound']);
    const key = await createApiKey(app, org, ['members:read']);
    const byKey = await request(app).patch(`${businessPath(org.id)}/members/${users.get('cashier')?.id}`).set(key.auth).send({ role: 'cashier' });
    expect([byKey.status, byKey.body.error]).toEqual([403, 'ApiKeyNotAllowed']);
  });

  it('members/me changes the caller: an owner or admin steps down (never up to owner), the event names the role it had', async () => {
    const { org, tokens, users } = await staffedOrganization();
    const secondOwner = await createMember(org, 'owner');
    const me = (token: string, role: Role) => request(app).patch(`${businessPath(org.id)}/members/me`).set(bearer(token)).send({ role });
    const admin = tokens.get('admin') as string;
    const up = await me(admin, 'owner');
    expect([up.status, up.body.error]).toEqual([403, 'InsufficientRole']);
    const down = await me(admin, 'finance_manager');
    expect(down.status, JSON.stringify(down.body)).toBe(200);
    expect(down.body.data).toMatchObject({ user_id: users.get('admin')?.id, role: 'finance_manager', status: 'active' });
    const stepped = await me(await accessTokenFor(app, secondOwner), 'admin');
    expect(stepped.body.data).toMatchObject({ user_id: secondOwner.id, role: 'admin' });
    const events = await eventsOf(org.id, 'organization.member_role_changed');
    expect(events.map((e) => [e.actor_user_id, e.data.previous_role, e.data.object.role])).toEqual([
      [users.get('admin')?.id, 'admin', 'finance_manager'],
      [secondOwner.id, 'owner', 'admin'],
    ]);
    const last = await me(tokens.get('owner') as string, 'admin');
    expect([last.status, last.body.error]).toEqual([409, 'LastOwner']);
    const cashier = await me(tokens.get('cashier') as string, 'cashier');
    expect([cashier.status, cashier.body.error]).toEqual([403, 'InsufficientRole']);
  });

  it('the last active owner can neither be demoted, leave nor be removed (409 LastOwner)', async () => {
    const { org, tokens, users } = await staffedOrganization();
    const owner = tokens.get('owner') as string;
    const ownerId = users.get('owner')?.id as string;
    const demote = await request(app).patch(`${businessPath(org.id)}/members/${ownerId}`).set(bearer(owner)).send({ role: 'admin' });
    expect([demote.status, demote.body.error]).toEqual([409, 'LastOwner']);
    const leave = await request(app).delete(`${businessPath(org.id)}/members/me`).set(bearer(owner));
    expect([leave.status, leave.body.error]).toEqual([409, 'LastOwner']);
    const byAdmin = await request(app).delete(`${businessPath(org.id)}/members/${ownerId}`).set(bearer(tokens.get('admin') as string));
    expect([byAdmin.status, byAdmin.body.error]).toEqual([403, 'InsufficientRole']);
  });

  it('two owners removing each other at once: exactly one succeeds, and an owner remains', async () => {
    const org = await createOrganization();
    const a = await createMember(org, 'owner');
    const b = await createMember(org, 'owner');
    const [ta, tb] = [await accessTokenFor(app, a), await accessTokenFor(app, b)];
    const results = await Promise.all([
      request(app).delete(`${businessPath(org.id)}/members/${b.id}`).set(bearer(ta)),
      request(app).delete(`${businessPath(org.id)}/members/${a.id}`).set(bearer(tb)),
    ]);
    const statuses = results.map((res) => res.status).sort();
    expect(statuses[0]).toBe(200);
    expect([404, 409]).toContain(statuses[1]);
    const owners = await testKnex()('memberships').where({ organization_id: org.id, role: 'owner', status: 'active' });
    expect(owners).toHaveLength(1);
  });

  it("a member leaves with DELETE members/me; a removed member's token then gets 404 on the organisation but still works elsewhere", async () => {
    const { org, tokens, users } = await staffedOrganization();
    const cashier = tokens.get('cashier') as string;
    const left = await request(app).delete(`${businessPath(org.id)}/members/me`).set(bearer(cashier));
    expect(left.status, JSON.stringify(left.body)).toBe(200);
    expect(left.body.data).toMatchObject({ user_id: users.get('cashier')?.id, status: 'removed' });
    const director = tokens.get('director') as string;
    const removed = await request(app).delete(`${businessPath(org.id)}/members/${users.get('director')?.id}`).set(bearer(tokens.get('admin') as string));
    expect(removed.status).toBe(200);
    const events = await eventsOf(org.id, 'organization.member_removed');
    expect(events.map((e) => e.actor_user_id)).toEqual([users.get('cashier')?.id, users.get('admin')?.id]);
    expect(events[1].data.object).toMatchObject({ user_id: users.get('director')?.id, status: 'removed' });
    const after = await request(app).get(businessPath(org.id)).set(bearer(director));
    expect([after.status, after.body.error]).toEqual([404, 'NotFound']);
    const me = await request(app).get('/api/me').set(bearer(director));
    expect(me.status).toBe(200);
    expect(me.body.data.organizations.map((o: { id: string }) => o.id)).not.toContain(org.id);
    const adminRemovesAdmin = await request(app).delete(`${businessPath(org.id)}/members/${(await createMember(org, 'admin')).id}`).set(bearer(tokens.get('admin') as string));
    expect(adminRemovesAdmin.body.error).toBe('InsufficientRole');
    const financeRemoves = await request(app).delete(`${businessPath(org.id)}/members/${users.get('representative')?.id}`).set(bearer(tokens.get('finance_manager') as string));
    expect([financeRemoves.status, financeRemoves.body.error]).toEqual([403, 'InsufficientRole']);
  });
});

describe('invitations', () => {
  async function invite(token: string, orgId: string, identifier: string, role: Role = 'finance_manager') {
    return request(app).post(`${businessPath(orgId)}/invitations`).set(bearer(token)).send({ identifier, role });
  }

  it('owner and admin invite; others 403; keys never; the invitee sees it, accepts once (idempotent), joins with its role; events name their actors', async () => {
    const { org, tokens, users } = await staffedOrganization();
    const invitee = await createUser();
    for (const role of ['representative', 'director', 'finance_manager', 'cashier'] as Role[]) {
      expect((await invite(tokens.get(role) as string, org.id, invitee.email as string)).status, role).toBe(403);
    }
    expect((await invite(tokens.get('admin') as string, org.id, invitee.email as string, 'owner')).body.error).toBe('InsufficientRole');
    const sent = await invite(tokens.get('admin') as string, org.id, (invitee.email as string).toUpperCase());
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    const invitation = sent.body.data;
    expect(invitation).toMatchObject({ identifier: invitee.email, role: 'finance_manager', status: 'pending', invited_by: users.get('admin')?.id });
    expect(new Date(invitation.expires_at).getTime() - new Date(invitation.created_at).getTime()).toBe(7 * DAY_MS);
    const sentMessages = await testKnex()('notification_outbox').where({ recipient: invitee.email });
    expect(sentMessages).toEqual([expect.objectContaining({ channel: 'email', template: 'organization_invitation' })]);
    const listed = await request(app).get(`${businessPath(org.id)}/invitations`).set(bearer(tokens.get('owner') as string));
    expect(listed.body.data.data.map((i: { id: string }) => i.id)).toContain(invitation.id);
    expect((await request(app).get(`${businessPath(org.id)}/invitations`).set(bearer(tokens.get('director') as string))).status).toBe(403);

    const inviteeToken = await accessTokenFor(app, invitee);
    const mine = await request(app).get('/api/me/organization-invitations').set(bearer(inviteeToken));
    expect(mine.body.data.data).toEqual([expect.objectContaining({ id: invitation.id, organization_id: org.id })]);
    const stranger = await accessTokenFor(app, await createUser());
    const bySomeoneElse = await request(app).post(`/api/me/organization-invitations/${invitation.id}/accept`).set(bearer(stranger));
    expect([bySomeoneElse.status, bySomeoneElse.body.error]).toEqual([404, 'InvitationNotFound']);
    const accepted = await request(app).post(`/api/me/organization-invitations/${invitation.id}/accept`).set(bearer(inviteeToken));
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(accepted.body.data.status).toBe('accepted');
    const again = await request(app).post(`/api/me/organization-invitations/${invitation.id}/accept`).set(bearer(inviteeToken));
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(accepted.body.data);
    const org2 = await request(app).get(businessPath(org.id)).set(bearer(inviteeToken));
    expect(org2.status).toBe(200);
    const membership = await testKnex()('memberships').where({ organization_id: org.id, user_id: invitee.id });
    expect(membership).toEqual([expect.objectContaining({ role: 'finance_manager', status: 'active' })]);
    expect(await eventsOf(org.id, 'organization.member_invited')).toEqual([expect.objectContaining({ actor_user_id: users.get('admin')?.id })]);
    const joined = await eventsOf(org.id, 'organization.member_joined');
    expect(joined).toEqual([expect.objectContaining({ actor_user_id: invitee.id })]);
    expect(joined[0].data.object.identifier).toContain('***');
    const reinvite = await invite(tokens.get('owner') as string, org.id, invitee.email as string);
    expect([reinvite.status, reinvite.body.error]).toEqual([409, 'AlreadyMember']);
    const key = await createApiKey(app, org, ['members:read']);
    const byKey = await request(app).post(`${businessPath(org.id)}/invitations`).set(key.auth).send({ identifier: 'x@example.com', role: 'cashier' });
    expect([byKey.status, byKey.body.error]).toEqual([403, 'ApiKeyNotAllowed']);
  });

  it('an invitation accepted after it expired answers 409 InvitationExpired; a revoked one 404; a declined one cannot be accepted; revoking and declining are events with their actors', async () => {
    const { org, tokens, users } = await staffedOrganization();
    const invitee = await createUser();
    const inviteeToken = await accessTokenFor(app, invitee);
    const expiring = (await invite(tokens.get('owner') as string, org.id, invitee.email as string)).body.data;
    clockMs += 7 * DAY_MS + 1000;
    try {
      const late = await request(app).post(`/api/me/organization-invitations/${expiring.id}/accept`).set(bearer(inviteeToken));
      expect([late.status, late.body.error]).toEqual([409, 'InvitationExpired']);
      const listed = await request(app).get('/api/me/organization-invitations').set(bearer(inviteeToken));
      expect(listed.body.data.data[0]).toMatchObject({ id: expiring.id, status: 'expired' });
    } finally {
      clockMs -= 7 * DAY_MS + 1000;
    }
    const revoked = (await invite(tokens.get('owner') as string, org.id, invitee.email as string)).body.data;
    expect((await request(app).delete(`${businessPath(org.id)}/invitations/${revoked.id}`).set(bearer(tokens.get('admin') as string))).body.data.status).toBe('revoked');
    const gone = await request(app).post(`/api/me/organization-invitations/${revoked.id}/accept`).set(bearer(inviteeToken));
    expect([gone.status, gone.body.error]).toEqual([404, 'InvitationNotFound']);
    const declined = (await invite(tokens.get('owner') as string, org.id, invitee.email as string)).body.data;
    expect((await request(app).post(`/api/me/organization-invitations/${declined.id}/decline`).set(bearer(inviteeToken))).body.data.status).toBe('declined');
    const after = await request(app).post(`/api/me/organization-invitations/${declined.id}/accept`).set(bearer(inviteeToken));
    expect([after.status, after.body.error]).toEqual([409, 'InvitationNotPending']);
    expect((await request(app).post(`/api/me/organization-invitations/${declined.id}/decline`).set(bearer(inviteeToken))).status).toBe(200);
    const replaced = (await invite(tokens.get('owner') as string, org.id, invitee.email as string)).body.data;
    await invite(tokens.get('admin') as string, org.id, invitee.email as string);
    const revokedEvents = await eventsOf(org.id, 'organization.invitation_revoked');
    // The expired one was still pending: the next invitation of the same identifier replaced it.
    expect(revokedEvents.map((e) => [e.subject_id, e.actor_user_id, e.data.object.status, e.data.previous_status])).toEqual([
      [expiring.id, users.get('owner')?.id, 'revoked', 'pending'],
      [revoked.id, users.get('admin')?.id, 'revoked', 'pending'],
      [replaced.id, users.get('admin')?.id, 'revoked', 'pending'],
    ]);
    expect(revokedEvents[0].data.object.identifier).toContain('***');
    const declinedEvents = await eventsOf(org.id, 'organization.invitation_declined');
    expect(declinedEvents.map((e) => [e.subject_id, e.actor_user_id, e.data.object.status, e.data.previous_status])).toEqual([[declined.id, invitee.id, 'declined', 'pending']]);
    const listed = await request(app).get(`${businessPath(org.id)}/events?type=organization.*&limit=100`).set(bearer(tokens.get('owner') as string));
    const types = listed.body.data.data.map((e: { type: string }) => e.type).filter((type: string) => type.startsWith('organization.invitation_'));
    expect(types.sort()).toEqual(['organization.invitation_declined', 'organization.invitation_revoked', 'organization.invitation_revoked', 'organization.invitation_revoked']);
  });

  it('an invitation of an identifier nobody has signed up with is kept for when that person does', async () => {
    const { org, tokens } = await staffedOrganization();
    const phone = `+22507${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`;
    const sent = await invite(tokens.get('owner') as string, org.id, phone, 'cashier');
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    expect(await testKnex()('notification_outbox').where({ recipient: phone, channel: 'sms' })).toHaveLength(1);
    const newcomer = await createUser({ email: null, phone });
    const token = await accessTokenFor(app, newcomer);
    const mine = await request(app).get('/api/me/organization-invitations').set(bearer(token));
    expect(mine.body.data.data.map((i: { id: string }) => i.id)).toEqual([sent.body.data.id]);
    expect((await request(app).post(`/api/me/organization-invitations/${sent.body.data.id}/accept`).set(bearer(token))).status).toBe(200);
    expect((await request(app).get(`${businessPath(org.id)}/members`).set(bearer(tokens.get('owner') as string))).body.data.data.map((m: { user_id: string }) => m.user_id)).toContain(newcomer.id);
  });

  it('a non-member gets 404 on every member and invitation route', async () => {
    const org = await createOrganization();
    await createMember(org, 'owner');
    const outsider = await memberToken(app, await createOrganization(), 'owner');
    const base = businessPath(org.id);
    const calls = [
      request(app).get(`${base}/invitations`).set(bearer(outsider)),
      request(app).post(`${base}/invitations`).set(bearer(outsider)).send({ identifier: 'a@example.com', role: 'cashier' }),
      request(app).patch(`${base}/members/me`).set(bearer(outsider)).send({ role: 'cashier' }),
      request(app).delete(`${base}/members/me`).set(bearer(outsider)),
      request(app).patch(base).set(bearer(outsider)).send({ trading_name: 'X' }),
    ];
    for (const res of await Promise.all(calls)) expect([res.status, res.body.error]).toEqual([404, 'NotFound']);
  });
});
