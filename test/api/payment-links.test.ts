import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, businessPath, createMember, createOrgAccount, createOrganization, memberToken, type TestOrganization } from '../support/factories';

let app: App;
let org: TestOrganization;
let owner: string;

beforeAll(async () => {
  app = await buildTestApp();
  org = await createOrganization({ name: 'Demo <Trading> & Co' });
  owner = await accessTokenFor(app, await createMember(org, 'owner'));
});

const base = businessPath;

describe('POST /business/organizations/{orgId}/checkout', () => {
  it('creates the Checkout of an account once and returns the same one afterwards, with its public URL and snippets', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const first = await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: account.id });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const checkout = first.body.data;
    expect(checkout).toMatchObject({
      kind: 'checkout',
      organization_id: org.id,
      destination_account_id: account.id,
      currency: 'XOF',
      status: 'active',
      amount: null,
      amount_minor: null,
      reference: null,
      expires_at: null,
      require_signed_amount: false,
    });
    expect(checkout.code).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(checkout.public_url).toBe(`http://pay.test/pay/${checkout.code}`);
    expect(checkout.snippets.link_with_amount).toBe(`http://pay.test/pay/${checkout.code}?amount={AMOUNT}&reference={REFERENCE}`);
    expect(checkout.snippets.html_button).toBe(
      `<a href="http://pay.test/pay/${checkout.code}" target="_blank" rel="noopener noreferrer">Pay Demo &lt;Trading&gt; &amp; Co</a>`,
    );

    const again = await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: account.id });
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(checkout);
  });

  it('gives concurrent first calls for one account the same single Checkout', async () => {
    const account = await createOrgAccount(org, { currency: 'EUR' });
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: account.id })),
    );
    for (const res of responses) expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(new Set(responses.map((res) => res.body.data.id)).size).toBe(1);
    expect(new Set(responses.map((res) => res.body.data.code)).size).toBe(1);
    const rows = await testKnex()('payment_links').where({ destination_account_id: account.id, kind: 'checkout' });
    expect(rows).toHaveLength(1);
  });

  it('refuses an account of another organisation or an unknown one with 400, an inactive one with 409', async () => {
    const foreign = await createOrgAccount(await createOrganization(), { currency: 'XOF' });
    const res = await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: foreign.id });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ success: false, error: 'ValidationError', details: [{ field: 'body.destination_account_id' }] });
    expect(await testKnex()('payment_links').where({ destination_account_id: foreign.id })).toHaveLength(0);

    const unknown = await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: '00000000-0000-4000-8000-000000000000' });
    expect(unknown.status).toBe(400);

    const inactive = await createOrgAccount(org, { currency: 'USD', status: 'inactive' });
    const refused = await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: inactive.id });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ success: false, error: 'DestinationAccountInactive' });
  });

  it('refuses invalid bodies with 400 and names the field', async () => {
    for (const body of [{}, { destination_account_id: 'nope' }, { destination_account_id: '00000000-0000-4000-8000-000000000000', extra: 1 }]) {
      const res = await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe('ValidationError');
      expect(res.body.details.length).toBeGreaterThan(0);
    }
  });

  it('lets owner, admin and finance_manager in; refuses the other roles (403), foreign callers (404), no token (401)', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    for (const role of ['owner', 'admin', 'finance_manager'] as const) {
      const res = await request(app).post(`${base(org.id)}/checkout`).set(bearer(await memberToken(app, org, role))).send({ destination_account_id: account.id });
      expect(res.status, role).toBe(200);
    }
    for (const role of ['representative', 'director', 'cashier'] as const) {
      const res = await request(app).post(`${base(org.id)}/checkout`).set(bearer(await memberToken(app, org, role))).send({ destination_account_id: account.id });
      expect(res.status, role).toBe(403);
      expect(res.body.error).toBe('InsufficientRole');
    }
    const stranger = await memberToken(app, await createOrganization(), 'owner');
    const foreign = await request(app).post(`${base(org.id)}/checkout`).set(bearer(stranger)).send({ destination_account_id: account.id });
    expect(foreign.status).toBe(404);
    const anonymous = await request(app).post(`${base(org.id)}/checkout`).send({ destination_account_id: account.id });
    expect(anonymous.status).toBe(401);
  });

  it('answers 423 when the payment links module is locked or read-only, 403 when it is not enabled', async () => {
    for (const access of ['locked', 'read_only'] as const) {
      const locked = await createOrganization({ modules: { payment_links: access } });
      const account = await createOrgAccount(locked, { currency: 'XOF' });
      const res = await request(app).post(`${base(locked.id)}/checkout`).set(bearer(await memberToken(app, locked, 'owner'))).send({ destination_account_id: account.id });
      expect(res.status, access).toBe(423);
      expect(res.body.error).toBe('ModuleLocked');
      // Reads stay possible.
      const list = await request(app).get(`${base(locked.id)}/payment-links`).set(bearer(await memberToken(app, locked, 'owner')));
      expect(list.status).toBe(200);
    }
    const without = await createOrganization({ modules: { payment_links: null } });
    const account = await createOrgAccount(without, { currency: 'XOF' });
    const res = await request(app).post(`${base(without.id)}/checkout`).set(bearer(await memberToken(app, without, 'owner'))).send({ destination_account_id: account.id });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('FeatureUnavailable');
  });

  it('answers 422 OrganizationInactive to every write of an inactive or suspended organisation; reads stay possible', async () => {
    for (const status of ['inactive', 'suspended'] as const) {
      const organization = await createOrganization();
      const token = await memberToken(app, organization, 'owner');
      const account = await createOrgAccount(organization, { currency: 'XOF' });
      const checkout = await request(app).post(`${base(organization.id)}/checkout`).set(bearer(token)).send({ destination_account_id: account.id });
      expect(checkout.status).toBe(200);
      await testKnex()('organizations').where({ id: organization.id }).update({ status });

      const writes = [
        request(app).post(`${base(organization.id)}/checkout`).set(bearer(token)).send({ destination_account_id: account.id }),
        request(app).post(`${base(organization.id)}/payment-links`).set(bearer(token)).send({ destination_account_id: account.id, amount: 100 }),
        request(app).post(`${base(organization.id)}/payment-links/${checkout.body.data.id}/signed-links`).set(bearer(token)).send({ amount: 100, reference: 'A' }),
        request(app).post(`${base(organization.id)}/payment-links/${checkout.body.data.id}/deactivate`).set(bearer(token)),
      ];
      for (const res of await Promise.all(writes)) {
        expect(res.status, `${status}: ${JSON.stringify(res.body)}`).toBe(422);
        expect(res.body).toMatchObject({ success: false, error: 'OrganizationInactive' });
      }
      expect(await testKnex()('payment_links').where({ organization_id: organization.id })).toHaveLength(1);
      expect((await testKnex()('payment_links').where({ id: checkout.body.data.id }).first()).status).toBe('active');

      expect((await request(app).get(`${base(organization.id)}/payment-links`).set(bearer(token))).status).toBe(200);
      expect((await request(app).get(`${base(organization.id)}/payment-links/${checkout.body.data.id}`).set(bearer(token))).status).toBe(200);
      expect((await request(app).get(`${base(organization.id)}/payments`).set(bearer(token))).status).toBe(200);
    }
  });

  it('sets require_signed_amount when asked, and reactivates a deactivated Checkout', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const created = await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: account.id, require_signed_amount: true });
    expect(created.body.data.require_signed_amount).toBe(true);
    const deactivated = await request(app).post(`${base(org.id)}/payment-links/${created.body.data.id}/deactivate`).set(bearer(owner));
    expect(deactivated.status).toBe(200);
    expect(deactivated.body.data.status).toBe('inactive');
    const again = await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: account.id });
    expect(again.body.data).toMatchObject({ id: created.body.data.id, code: created.body.data.code, status: 'active', require_signed_amount: true });
  });
});

describe('GET /business/organizations/{orgId}/payment-links', () => {
  it('lists the organisation links newest first, filters by kind and pages with starting_after', async () => {
    const own = await createOrganization();
    const token = await memberToken(app, own, 'owner');
    const account = await createOrgAccount(own, { currency: 'XOF' });
    const checkout = await request(app).post(`${base(own.id)}/checkout`).set(bearer(token)).send({ destination_account_id: account.id });
    const links: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const res = await request(app).post(`${base(own.id)}/payment-links`).set(bearer(token)).send({ destination_account_id: account.id, amount: 1000 + i });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      links.push(res.body.data.id);
    }
    // Someone else's links never show.
    const other = await createOrganization();
    await request(app).post(`${base(other.id)}/checkout`).set(bearer(await memberToken(app, other, 'owner'))).send({ destination_account_id: (await createOrgAccount(other)).id });

    const all = await request(app).get(`${base(own.id)}/payment-links`).set(bearer(await memberToken(app, own, 'representative')));
    expect(all.status).toBe(200);
    expect(all.body.data.data.map((l: { id: string }) => l.id)).toEqual([...links].reverse().concat(checkout.body.data.id));
    expect(all.body.data).toMatchObject({ object: 'list', has_more: false, next_cursor: null });

    const checkouts = await request(app).get(`${base(own.id)}/payment-links?kind=checkout`).set(bearer(token));
    expect(checkouts.body.data.data.map((l: { id: string }) => l.id)).toEqual([checkout.body.data.id]);
    const oneOff = await request(app).get(`${base(own.id)}/payment-links?kind=link`).set(bearer(token));
    expect(oneOff.body.data.data).toHaveLength(3);

    const page1 = await request(app).get(`${base(own.id)}/payment-links?limit=2`).set(bearer(token));
    expect(page1.body.data).toMatchObject({ has_more: true, next_cursor: links[1] });
    const page2 = await request(app).get(`${base(own.id)}/payment-links?limit=2&starting_after=${page1.body.data.next_cursor}`).set(bearer(token));
    expect(page2.body.data.data.map((l: { id: string }) => l.id)).toEqual([links[0], checkout.body.data.id]);
    expect(page2.body.data).toMatchObject({ has_more: false, next_cursor: null });
  });

  it('refuses a kind outside link|checkout, a bad limit, an unknown query parameter or a foreign cursor with 400', async () => {
    for (const query of ['kind=other', 'kind=', 'limit=0', 'limit=501', 'limit=x', 'colour=red', 'starting_after=nope', 'starting_after=00000000-0000-4000-8000-000000000000']) {
      const res = await request(app).get(`${base(org.id)}/payment-links?${query}`).set(bearer(owner));
      expect(res.status, query).toBe(400);
      expect(res.body.error).toBe('ValidationError');
    }
  });

  it('is open to the financial roles only', async () => {
    for (const role of ['owner', 'admin', 'representative', 'director', 'finance_manager'] as const) {
      expect((await request(app).get(`${base(org.id)}/payment-links`).set(bearer(await memberToken(app, org, role)))).status, role).toBe(200);
    }
    const cashier = await request(app).get(`${base(org.id)}/payment-links`).set(bearer(await memberToken(app, org, 'cashier')));
    expect(cashier.status).toBe(403);
    expect((await request(app).get(`${base(org.id)}/payment-links`)).status).toBe(401);
    expect((await request(app).get(`${base(org.id)}/payment-links`).set(bearer(await memberToken(app, await createOrganization(), 'owner')))).status).toBe(404);
  });
});

describe('one-off payment links', () => {
  it('creates a fixed-amount link with description, reference and expiry', async () => {
    const account = await createOrgAccount(org, { currency: 'EUR' });
    const expiresAt = new Date(Date.now() + 7 * 86_400_000).toISOString();
    const res = await request(app)
      .post(`${base(org.id)}/payment-links`)
      .set(bearer(owner))
      .send({ destination_account_id: account.id, amount: 10.5, description: 'Delivery fee', reference: 'ORDER-2001', expires_at: expiresAt });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data).toMatchObject({
      kind: 'link',
      currency: 'EUR',
      amount: 10.5,
      amount_minor: '1050',
      minimum_amount: null,
      maximum_amount: null,
      description: 'Delivery fee',
      reference: 'ORDER-2001',
      status: 'active',
      expires_at: expiresAt,
    });
    const fetched = await request(app).get(`${base(org.id)}/payment-links/${res.body.data.id}`).set(bearer(owner));
    expect(fetched.status).toBe(200);
    expect(fetched.body.data).toEqual(res.body.data);
  });

  it('creates a customer-chosen amount link with bounds', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const res = await request(app).post(`${base(org.id)}/payment-links`).set(bearer(owner)).send({ destination_account_id: account.id, minimum_amount: 1000, maximum_amount: 50000 });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ amount: null, minimum_amount: 1000, maximum_amount: 50000 });
  });

  it('refuses invalid links with 400 and an inactive account with 409', async () => {
    const xof = await createOrgAccount(org, { currency: 'XOF' });
    const eur = await createOrgAccount(org, { currency: 'EUR' });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ destination_account_id: xof.id, amount: 1.5 }, 'body.amount'],
      [{ destination_account_id: eur.id, amount: 10.505 }, 'body.amount'],
      [{ destination_account_id: xof.id, amount: 0 }, 'body.amount'],
      [{ destination_account_id: xof.id, amount: -5 }, 'body.amount'],
      [{ destination_account_id: xof.id, amount: 100, minimum_amount: 10 }, 'body.amount'],
      [{ destination_account_id: xof.id, minimum_amount: 500, maximum_amount: 100 }, 'body.minimum_amount'],
      [{ destination_account_id: xof.id, expires_at: '2020-01-01T00:00:00Z' }, 'body.expires_at'],
      [{ destination_account_id: xof.id, expires_at: new Date(Date.now() + 400 * 86_400_000).toISOString() }, 'body.expires_at'],
      [{ destination_account_id: xof.id, reference: 'line\nbreak' }, 'body.reference'],
      [{ destination_account_id: xof.id, reference: '   ' }, 'body.reference'],
      [{ destination_account_id: xof.id, unknown: true }, 'body'],
    ];
    for (const [body, field] of cases) {
      const res = await request(app).post(`${base(org.id)}/payment-links`).set(bearer(owner)).send(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe('ValidationError');
      expect(JSON.stringify(res.body.details), JSON.stringify(body)).toContain(field);
    }
    const inactive = await createOrgAccount(org, { currency: 'XOF', status: 'inactive' });
    const refused = await request(app).post(`${base(org.id)}/payment-links`).set(bearer(owner)).send({ destination_account_id: inactive.id, amount: 100 });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('DestinationAccountInactive');
    const foreign = await createOrgAccount(await createOrganization());
    expect((await request(app).post(`${base(org.id)}/payment-links`).set(bearer(owner)).send({ destination_account_id: foreign.id, amount: 100 })).status).toBe(400);
  });

  it('shows an expired link as expired', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const res = await request(app).post(`${base(org.id)}/payment-links`).set(bearer(owner)).send({ destination_account_id: account.id, amount: 100 });
    await testKnex()('payment_links').where({ id: res.body.data.id }).update({ expires_at: new Date(Date.now() - 1000) });
    const fetched = await request(app).get(`${base(org.id)}/payment-links/${res.body.data.id}`).set(bearer(owner));
    expect(fetched.body.data.status).toBe('expired');
  });

  it('get and deactivate answer 404 for a link of another organisation; roles apply', async () => {
    const other = await createOrganization();
    const otherToken = await memberToken(app, other, 'owner');
    const account = await createOrgAccount(other, { currency: 'XOF' });
    const theirs = await request(app).post(`${base(other.id)}/payment-links`).set(bearer(otherToken)).send({ destination_account_id: account.id, amount: 100 });
    const get = await request(app).get(`${base(org.id)}/payment-links/${theirs.body.data.id}`).set(bearer(owner));
    expect(get.status).toBe(404);
    expect(get.body.error).toBe('PaymentLinkNotFound');
    const deactivate = await request(app).post(`${base(org.id)}/payment-links/${theirs.body.data.id}/deactivate`).set(bearer(owner));
    expect(deactivate.status).toBe(404);
    expect((await request(app).get(`${base(other.id)}/payment-links/${theirs.body.data.id}`).set(bearer(otherToken))).body.data.status).toBe('active');
    expect((await request(app).get(`${base(org.id)}/payment-links/not-a-uuid`).set(bearer(owner))).status).toBe(400);

    const director = await memberToken(app, other, 'director');
    expect((await request(app).post(`${base(other.id)}/payment-links`).set(bearer(director)).send({ destination_account_id: account.id, amount: 1 })).status).toBe(403);
    expect((await request(app).post(`${base(other.id)}/payment-links/${theirs.body.data.id}/deactivate`).set(bearer(director))).status).toBe(403);
    expect((await request(app).get(`${base(other.id)}/payment-links/${theirs.body.data.id}`).set(bearer(await memberToken(app, other, 'cashier')))).status).toBe(403);
  });

  it('gives snippets.link_with_amount only where the page would accept it, null otherwise', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const create = async (body: Record<string, unknown>) => {
      const res = await request(app).post(`${base(org.id)}/payment-links`).set(bearer(owner)).send({ destination_account_id: account.id, ...body });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body.data as { id: string; code: string; public_url: string; snippets: { link_with_amount: string | null; html_button: string } };
    };
    const template = (link: { public_url: string }) => `${link.public_url}?amount={AMOUNT}&reference={REFERENCE}`;

    const open = await create({ minimum_amount: 100, maximum_amount: 900 });
    expect(open.snippets.link_with_amount).toBe(template(open));
    const free = await create({});
    expect(free.snippets.link_with_amount).toBe(template(free));

    for (const body of [{ amount: 500 }, { reference: 'INV-7' }, { minimum_amount: 100, require_signed_amount: true }]) {
      const link = await create(body);
      expect(link.snippets.link_with_amount, JSON.stringify(body)).toBeNull();
      expect(link.snippets.html_button).toContain(link.public_url);
    }

    const deactivated = await request(app).post(`${base(org.id)}/payment-links/${open.id}/deactivate`).set(bearer(owner));
    expect(deactivated.body.data.snippets.link_with_amount).toBeNull();
    const expiring = await create({});
    await testKnex()('payment_links').where({ id: expiring.id }).update({ expires_at: new Date(Date.now() - 1000) });
    expect((await request(app).get(`${base(org.id)}/payment-links/${expiring.id}`).set(bearer(owner))).body.data.snippets.link_with_amount).toBeNull();
    await testKnex()('payment_links').where({ id: free.id }).update({ status: 'completed' });
    expect((await request(app).get(`${base(org.id)}/payment-links/${free.id}`).set(bearer(owner))).body.data.snippets.link_with_amount).toBeNull();
    const listed = await request(app).get(`${base(org.id)}/payment-links?kind=link`).set(bearer(owner));
    const byId = new Map(listed.body.data.data.map((l: { id: string; snippets: { link_with_amount: string | null } }) => [l.id, l.snippets.link_with_amount]));
    expect(byId.get(open.id)).toBeNull();

    // A Checkout that requires signed amounts has none; once it no longer requires them, it has it again.
    const checkoutAccount = await createOrgAccount(org, { currency: 'XOF' });
    const strict = await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: checkoutAccount.id, require_signed_amount: true });
    expect(strict.body.data.snippets.link_with_amount).toBeNull();
    const relaxed = await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: checkoutAccount.id, require_signed_amount: false });
    expect(relaxed.body.data.snippets.link_with_amount).toBe(template(relaxed.body.data));
  });

  it('deactivates a link (idempotently), never deletes it', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const link = await request(app).post(`${base(org.id)}/payment-links`).set(bearer(owner)).send({ destination_account_id: account.id, amount: 100 });
    const first = await request(app).post(`${base(org.id)}/payment-links/${link.body.data.id}/deactivate`).set(bearer(owner));
    expect(first.status).toBe(200);
    expect(first.body.data.status).toBe('inactive');
    const second = await request(app).post(`${base(org.id)}/payment-links/${link.body.data.id}/deactivate`).set(bearer(owner));
    expect(second.status).toBe(200);
    expect(second.body.data.status).toBe('inactive');
    expect(await testKnex()('payment_links').where({ id: link.body.data.id })).toHaveLength(1);
  });
});

describe('rate limits and state conflicts on the payment-links routes', () => {
  it('answers 429 RateLimitExceeded (envelope, Retry-After) on every payment-links and payments route once the caller spent its budget, and changes nothing', async () => {
    const limited = await buildTestApp({ env: { RATE_LIMIT_AUTHENTICATED: '3' } });
    const own = await createOrganization();
    const token = await accessTokenFor(limited, await createMember(own, 'owner'));
    const account = await createOrgAccount(own, { currency: 'XOF' });
    const checkout = await request(limited).post(`${base(own.id)}/checkout`).set(bearer(token)).send({ destination_account_id: account.id });
    expect(checkout.status).toBe(200);
    const linkId = checkout.body.data.id as string;
    for (let i = 0; i < 2; i += 1) expect((await request(limited).get(`${base(own.id)}/payment-links`).set(bearer(token))).status).toBe(200);

    const unknownPayment = '00000000-0000-4000-8000-000000000000';
    const calls: Array<[string, () => request.Test]> = [
      ['checkout', () => request(limited).post(`${base(own.id)}/checkout`).set(bearer(token)).send({ destination_account_id: account.id })],
      ['list links', () => request(limited).get(`${base(own.id)}/payment-links`).set(bearer(token))],
      ['create link', () => request(limited).post(`${base(own.id)}/payment-links`).set(bearer(token)).send({ destination_account_id: account.id, amount: 100 })],
      ['get link', () => request(limited).get(`${base(own.id)}/payment-links/${linkId}`).set(bearer(token))],
      ['deactivate', () => request(limited).post(`${base(own.id)}/payment-links/${linkId}/deactivate`).set(bearer(token))],
      ['signed link', () => request(limited).post(`${base(own.id)}/payment-links/${linkId}/signed-links`).set(bearer(token)).send({ amount: 100, reference: 'A' })],
      ['list payments', () => request(limited).get(`${base(own.id)}/payments`).set(bearer(token))],
      ['get payment', () => request(limited).get(`${base(own.id)}/payments/${unknownPayment}`).set(bearer(token))],
    ];
    for (const [label, call] of calls) {
      const res = await call();
      expect(res.status, label).toBe(429);
      expect(res.body, label).toMatchObject({ success: false, error: 'RateLimitExceeded' });
      expect(typeof res.body.message).toBe('string');
      expect(Number(res.headers['retry-after']), label).toBeGreaterThan(0);
    }
    const rows = await testKnex()('payment_links').where({ organization_id: own.id });
    expect(rows).toHaveLength(1);
    expect(rows[0].status).toBe('active');
    // Another caller has a budget of its own.
    const other = await accessTokenFor(limited, await createMember(own, 'admin'));
    expect((await request(limited).get(`${base(own.id)}/payment-links`).set(bearer(other))).status).toBe(200);
  });

  it('refuses to deactivate a completed (paid) link: 409 PaymentLinkNotActive, status unchanged', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const link = await request(app).post(`${base(org.id)}/payment-links`).set(bearer(owner)).send({ destination_account_id: account.id, amount: 100 });
    await testKnex()('payment_links').where({ id: link.body.data.id }).update({ status: 'completed' });
    const res = await request(app).post(`${base(org.id)}/payment-links/${link.body.data.id}/deactivate`).set(bearer(owner));
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ success: false, error: 'PaymentLinkNotActive', details: { status: 'completed' } });
    expect((await request(app).get(`${base(org.id)}/payment-links/${link.body.data.id}`).set(bearer(owner))).body.data.status).toBe('completed');
  });
});

describe('POST /business/organizations/{orgId}/payment-links/{linkId}/signed-links', () => {
  it('signs an amount and a reference into the link URL', async () => {
    const account = await createOrgAccount(org, { currency: 'EUR' });
    const checkout = await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: account.id });
    const res = await request(app)
      .post(`${base(org.id)}/payment-links/${checkout.body.data.id}/signed-links`)
      .set(bearer(owner))
      .send({ amount: 25.5, reference: 'ORDER 1042/é', expires_in_seconds: 3600 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ link_id: checkout.body.data.id, amount: 25.5, amount_minor: '2550', currency: 'EUR', reference: 'ORDER 1042/é' });
    const url = new URL(res.body.data.url);
    expect(`${url.origin}${url.pathname}`).toBe(checkout.body.data.public_url);
    expect(url.searchParams.get('amount')).toBe('25.50');
    expect(url.searchParams.get('reference')).toBe('ORDER 1042/é');
    expect(url.searchParams.get('sig')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Number(url.searchParams.get('exp')) * 1000).toBe(new Date(res.body.data.expires_at).getTime());
  });

  it('refuses an amount outside the link, an invalid body, or an inactive link', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const link = await request(app).post(`${base(org.id)}/payment-links`).set(bearer(owner)).send({ destination_account_id: account.id, minimum_amount: 100, maximum_amount: 200 });
    const url = `${base(org.id)}/payment-links/${link.body.data.id}/signed-links`;
    for (const body of [{ amount: 50, reference: 'A' }, { amount: 150.5, reference: 'A' }, { amount: 150 }, { amount: 150, reference: 'A', expires_in_seconds: 10 }]) {
      const res = await request(app).post(url).set(bearer(owner)).send(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    await request(app).post(`${base(org.id)}/payment-links/${link.body.data.id}/deactivate`).set(bearer(owner));
    const inactive = await request(app).post(url).set(bearer(owner)).send({ amount: 150, reference: 'A' });
    expect(inactive.status).toBe(409);
    expect(inactive.body.error).toBe('PaymentLinkNotActive');
  });
});
