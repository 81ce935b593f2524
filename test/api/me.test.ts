import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { accessTokenFor, addMember, bearer, createOrganization, createUser, uniquePhone } from '../support/factories';

let app: App;

beforeAll(async () => {
  app = await buildTestApp();
});

describe('GET /me', () => {
  it('returns the user and the organisations where they are an active member, with role and status', async () => {
    const user = await createUser({ phone: uniquePhone() });
    const active = await createOrganization({ name: `A ${user.id}` });
    const inactive = await createOrganization({ name: `B ${user.id}`, status: 'inactive' });
    const invited = await createOrganization();
    const suspended = await createOrganization();
    const foreign = await createOrganization();
    await addMember(active, user, 'finance_manager');
    await addMember(inactive, user, 'owner');
    await addMember(invited, user, 'admin', 'invited');
    await addMember(suspended, user, 'admin', 'suspended');
    await addMember(foreign, await createUser(), 'owner');

    const res = await request(app).get('/api/me').set(bearer(await accessTokenFor(app, user)));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: {
        id: user.id,
        email: user.email,
        phone: user.phone,
        is_admin: false,
        tier: 'tier_0',
        verification_status: 'unverified',
        organizations: [
          { id: active.id, name: active.name, status: 'active', role: 'finance_manager' },
          { id: inactive.id, name: inactive.name, status: 'inactive', role: 'owner' },
        ],
      },
    });
    expect(JSON.stringify(res.body)).not.toMatch(/password|argon2/);
  });

  it('an administrator gets the same kind of token, flagged is_admin', async () => {
    const admin = await createUser({ isAdmin: true });
    const res = await request(app).get('/api/me').set(bearer(await accessTokenFor(app, admin)));
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: admin.id, is_admin: true, organizations: [] });
  });

  it('requires a token', async () => {
    const res = await request(app).get('/api/me');
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('Unauthorized');
    expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
  });
});
