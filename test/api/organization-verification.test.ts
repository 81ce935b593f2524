import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { createApiKey } from '../support/api-keys';
import { TINY_PDF } from '../support/contract-requests';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, businessPath, createMember, createOrganization, createUser, type TestOrganization, type TestUser } from '../support/factories';

/**
 * Business verification: the owner uploads the registration document and names a tier_2
 * representative; the sandbox provider decides its test numbers, an administrator who is not
 * a member decides the others; every change is an organization.verification_updated event
 * with its actor.
 */
let app: App;

beforeAll(async () => {
  app = await buildTestApp();
});

async function organization(registrationNumber: string): Promise<{ org: TestOrganization; owner: TestUser; ownerToken: string; representative: TestUser }> {
  const org = await createOrganization();
  await testKnex()('organizations').where({ id: org.id }).update({ registration_number: registrationNumber, country: 'CI', legal_form: 'company' });
  const owner = await createMember(org, 'owner');
  const representative = await createMember(org, 'representative');
  await testKnex()('users').where({ id: representative.id }).update({ tier: 'tier_2' });
  return { org, owner, ownerToken: await accessTokenFor(app, owner), representative };
}

function submit(orgId: string, auth: { Authorization: string }, representativeUserId: string, file: Buffer = TINY_PDF, corrections: Record<string, string> = {}) {
  let req = request(app).post(`${businessPath(orgId)}/verification`).set(auth).field('representative_user_id', representativeUserId);
  for (const [name, value] of Object.entries(corrections)) req = req.field(name, value);
  return req.attach('registration_document', file, 'registration.pdf');
}

async function verificationEvents(orgId: string) {
  return testKnex()('events').where({ organization_id: orgId, type: 'organization.verification_updated' }).orderBy('sequence');
}

describe('submitting the business verification', () => {
  it('a representative who is not tier_2 answers 409 RepresentativeNotVerified, and nothing is stored', async () => {
    const s = await organization('CI-ABJ-1');
    const unverified = await createMember(s.org, 'director');
    const res = await submit(s.org.id, bearer(s.ownerToken), unverified.id);
    expect([res.status, res.body.error]).toEqual([409, 'RepresentativeNotVerified']);
    const outsider = await createUser();
    await testKnex()('users').where({ id: outsider.id }).update({ tier: 'tier_2' });
    const notMember = await submit(s.org.id, bearer(s.ownerToken), outsider.id);
    expect(notMember.body.error).toBe('RepresentativeNotVerified');
    expect(await testKnex()('uploaded_documents').where({ owner_type: 'organization', owner_id: s.org.id })).toHaveLength(0);
    expect((await request(app).get(businessPath(s.org.id)).set(bearer(s.ownerToken))).body.data.verification.status).toBe('unverified');
  });

  it('only the owner submits; an admin 403, an API key 403', async () => {
    const s = await organization('CI-ABJ-2');
    const admin = await accessTokenFor(app, await createMember(s.org, 'admin'));
    expect((await submit(s.org.id, bearer(admin), s.representative.id)).body.error).toBe('InsufficientRole');
    const key = await createApiKey(app, s.org, ['members:read']);
    expect((await submit(s.org.id, key.auth, s.representative.id)).body.error).toBe('ApiKeyNotAllowed');
  });

  it('a file that is not a JPEG, PNG or PDF answers 422 UnsupportedDocumentType', async () => {
    const s = await organization('CI-ABJ-3');
    const res = await submit(s.org.id, bearer(s.ownerToken), s.representative.id, Buffer.from('plain text, not a document'));
    expect([res.status, res.body.error]).toEqual([422, 'UnsupportedDocumentType']);
  });

  it('a pending submission waits for an administrator, who is never a member: approve and reject with their actor', async () => {
    const s = await organization('CI-ABJ-4');
    const res = await submit(s.org.id, bearer(s.ownerToken), s.representative.id);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.verification).toMatchObject({ status: 'pending', representative_user_id: s.representative.id, requirements: { due: [], pending: ['registration_document', 'representative'] } });
    const [stored] = await testKnex()('uploaded_documents').where({ owner_type: 'organization', owner_id: s.org.id });
    expect(stored).toMatchObject({ kind: 'registration_document', content_type: 'application/pdf' });
    expect((await submit(s.org.id, bearer(s.ownerToken), s.representative.id)).body.error).toBe('VerificationAlreadySubmitted');

    const administrator = await createUser({ isAdmin: true });
    const adminToken = await accessTokenFor(app, administrator);
    const queue = await request(app).get('/api/admin/organization-verifications?status=pending').set(bearer(adminToken));
    expect(queue.status).toBe(200);
    expect(queue.body.data.data.map((o: { id: string }) => o.id)).toContain(s.org.id);
    expect((await request(app).get('/api/admin/organization-verifications').set(bearer(s.ownerToken))).body.error).toBe('InsufficientRole');

    const memberAdministrator = await createUser({ isAdmin: true });
    await testKnex()('memberships').insert({ organization_id: s.org.id, user_id: memberAdministrator.id, role: 'director', status: 'active' });
    const conflicted = await request(app).post(`/api/admin/organization-verifications/${s.org.id}/approve`).set(bearer(await accessTokenFor(app, memberAdministrator)));
    expect([conflicted.status, conflicted.body.error]).toEqual([403, 'ConflictOfInterest']);
    const notAdmin = await request(app).post(`/api/admin/organization-verifications/${s.org.id}/approve`).set(bearer(s.ownerToken));
    expect([notAdmin.status, notAdmin.body.error]).toEqual([403, 'InsufficientRole']);

    const rejected = await request(app)
      .post(`/api/admin/organization-verifications/${s.org.id}/reject`)
      .set(bearer(adminToken))
      .send({ requirement: 'representative', reason: 'The representative does not appear in the register.' });
    expect(rejected.status, JSON.stringify(rejected.body)).toBe(200);
    expect(rejected.body.data.verification).toMatchObject({
      status: 'rejected',
      requirements: { due: ['registration_document', 'representative'], errors: [{ requirement: 'representative', reason: 'The representative does not appear in the register.' }] },
    });
    expect((await request(app).post(`/api/admin/organization-verifications/${s.org.id}/approve`).set(bearer(adminToken))).body.error).toBe('VerificationNotPending');
    expect((await submit(s.org.id, bearer(s.ownerToken), s.representative.id)).status).toBe(200);
    const approved = await request(app).post(`/api/admin/organization-verifications/${s.org.id}/approve`).set(bearer(adminToken));
    expect(approved.body.data.verification).toMatchObject({ status: 'verified', requirements: { due: [], pending: [], errors: [] } });
    expect(approved.body.data.verification.decided_at).not.toBeNull();
    const events = await verificationEvents(s.org.id);
    expect(events.map((e) => [e.data.object.verification.status, e.actor_user_id])).toEqual([
      ['pending', s.owner.id],
      ['rejected', administrator.id],
      ['pending', s.owner.id],
      ['verified', administrator.id],
    ]);
  });

  it('the sandbox provider decides its test registration numbers at once (actor: none)', async () => {
    const verified = await organization('CI-ABJ-2026-0000');
    const res = await submit(verified.org.id, bearer(verified.ownerToken), verified.representative.id);
    expect(res.body.data.verification.status).toBe('verified');
    expect((await verificationEvents(verified.org.id)).map((e) => [e.data.object.verification.status, e.actor_user_id])).toEqual([
      ['pending', verified.owner.id],
      ['verified', null],
    ]);
    const rejected = await organization('CI-ABJ-2026-9999');
    const refused = await submit(rejected.org.id, bearer(rejected.ownerToken), rejected.representative.id);
    expect(refused.body.data.verification).toMatchObject({ status: 'rejected', requirements: { errors: [{ requirement: 'registration_document' }] } });
  });

  it('a rejected organisation corrects its registration number when it submits again, and the provider decides on the corrected one', async () => {
    const s = await organization('CI-ABJ-2026-9999');
    const refused = await submit(s.org.id, bearer(s.ownerToken), s.representative.id);
    expect(refused.body.data.verification.status).toBe('rejected');
    const corrected = await submit(s.org.id, bearer(s.ownerToken), s.representative.id, TINY_PDF, { registration_number: 'CI-ABJ-2026-0000 ', legal_name: 'Baobab Commerce SARL', legal_form: 'company' });
    expect(corrected.status, JSON.stringify(corrected.body)).toBe(200);
    expect(corrected.body.data).toMatchObject({ registration_number: 'CI-ABJ-2026-0000', legal_name: 'Baobab Commerce SARL', legal_form: 'company', country: 'CI', verification: { status: 'verified' } });
    const me = await request(app).get('/api/me').set(bearer(s.ownerToken));
    expect(me.body.data.organizations.find((o: { id: string }) => o.id === s.org.id).name).toBe('Baobab Commerce SARL');
    const events = await verificationEvents(s.org.id);
    expect(events.map((e) => [e.data.object.verification.status, e.data.object.registration_number, e.data.previous_attributes ?? null])).toEqual([
      ['pending', 'CI-ABJ-2026-9999', null],
      ['rejected', 'CI-ABJ-2026-9999', null],
      // legal_form was already `company`: only what changed is named.
      ['pending', 'CI-ABJ-2026-0000', { registration_number: 'CI-ABJ-2026-9999', legal_name: s.org.name }],
      ['verified', 'CI-ABJ-2026-0000', null],
    ]);
    const listed = await request(app).get(`${businessPath(s.org.id)}/events?type=organization.verification_updated`).set(bearer(s.ownerToken));
    expect(listed.body.data.data.map((e: { data: { previous_attributes?: unknown } }) => e.data.previous_attributes ?? null)).toContainEqual({ registration_number: 'CI-ABJ-2026-9999', legal_name: s.org.name });
  });

  it('corrections are refused once the verification is pending or verified, and a malformed one is a 400 naming the field', async () => {
    const s = await organization('CI-ABJ-5');
    const malformed = await submit(s.org.id, bearer(s.ownerToken), s.representative.id, TINY_PDF, { legal_form: 'llc' });
    expect(malformed.status).toBe(400);
    expect(JSON.stringify(malformed.body.details)).toContain('legal_form');
    const unassigned = await submit(s.org.id, bearer(s.ownerToken), s.representative.id, TINY_PDF, { country: 'ZZ' });
    expect([unassigned.status, unassigned.body.details]).toEqual([400, [{ field: 'body.country', message: 'country ZZ is not an ISO 3166-1 alpha-2 country code.' }]]);
    expect(await testKnex()('uploaded_documents').where({ owner_type: 'organization', owner_id: s.org.id })).toHaveLength(0);
    expect((await submit(s.org.id, bearer(s.ownerToken), s.representative.id)).body.data.verification.status).toBe('pending');
    const late = await submit(s.org.id, bearer(s.ownerToken), s.representative.id, TINY_PDF, { registration_number: 'CI-ABJ-5-0000' });
    expect([late.status, late.body.error]).toEqual([409, 'VerificationAlreadySubmitted']);
    const org = await request(app).get(businessPath(s.org.id)).set(bearer(s.ownerToken));
    expect(org.body.data).toMatchObject({ registration_number: 'CI-ABJ-5', verification: { status: 'pending' } });
  });
});
