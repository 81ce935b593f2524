import pino from 'pino';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Express } from 'express';
import type { RateLimitBackend } from '../../src/http/rate-limit';
import { signAmount, PaymentPageService, PaymentsService } from '../../src/modules/payment-links';
import { PaymentsRepository } from '../../src/modules/payment-links/payments-repository';
import { createPayApp } from '../../src/pay/pay-app';
import { buildTestApp, testConfig, type App } from '../support/app';
import { databaseKind, testDatabaseUrl, testKnex } from '../support/database';
import { createKnex } from '../../src/db/database';
import { AccountService } from '../../src/modules/accounts';
import { accessTokenFor, bearer, createMember, createOrgAccount, createOrganization, type TestOrgAccount, type TestOrganization, businessPath } from '../support/factories';
import { balanceOf, expectLedgerInvariants } from '../support/ledger-invariants';
import { until } from '../support/jobs';
import { statementUrl } from '../support/statements';

let app: App;
let payApp: Express;
let org: TestOrganization;
let owner: string;
let xof: TestOrgAccount;
let checkout: { id: string; code: string; public_url: string };

const base = businessPath;
const tokenIn = (html: string) => /name="token" value="([^"]+)"/.exec(html)?.[1] as string;

beforeAll(async () => {
  app = await buildTestApp();
  payApp = createPayApp({ config: testConfig(), logger: pino({ level: 'silent' }), paymentPage: app.services.paymentPage, rateLimitBackend: app.rateLimitBackend });
  org = await createOrganization({ name: 'Boutique <Awa>' });
  owner = await accessTokenFor(app, await createMember(org, 'owner'));
  xof = await createOrgAccount(org, { currency: 'XOF' });
  const res = await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: xof.id });
  checkout = res.body.data;
});

afterAll(async () => {
  await expectLedgerInvariants(testKnex());
});

async function createLink(body: Record<string, unknown>, organization = org, token = owner): Promise<{ id: string; code: string }> {
  const res = await request(app).post(`${base(organization.id)}/payment-links`).set(bearer(token)).send(body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

/**
 * The path of a Checkout URL whose amount and reference the merchant signed (as
 * POST .../signed-links makes them): only such a reference is the payment's order reference.
 */
function signedCheckout(amount: number, reference: string): string {
  return signedPath(checkout, String(amount), BigInt(amount), reference);
}

/** The same for any link: `amount` as written in the URL, `amountMinor` what it is in minor units. */
function signedPath(link: { id: string; code: string }, amount: string, amountMinor: bigint, reference: string): string {
  const expiresAt = Math.floor(Date.now() / 1000) + 3600;
  const sig = signAmount(testConfig().paySecret, { linkId: link.id, amountMinor, reference, expiresAt });
  return `/pay/${link.code}?amount=${amount}&reference=${encodeURIComponent(reference)}&exp=${expiresAt}&sig=${sig}`;
}

/** Opens the page in a fresh "browser" (cookie jar) and returns it with the form token. */
async function openPage(path: string): Promise<{ agent: TestAgent; token: string; html: string }> {
  const agent = request.agent(payApp);
  const res = await agent.get(path);
  expect(res.status, res.text).toBe(200);
  return { agent, token: tokenIn(res.text), html: res.text };
}

describe('GET /pay/:code', () => {
  it('renders the Checkout with the amount and reference of the URL, a CSRF token, a strict CSP and no script', async () => {
    const res = await request(payApp).get(`/pay/${checkout.code}?amount=25000&reference=ORDER-1042`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['cache-control']).toBe('no-store');
    const csp = res.headers['content-security-policy'] as string;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("form-action 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(res.text).not.toMatch(/<script/i);
    expect(res.text).toContain('Pay Boutique &lt;Awa&gt;');
    expect(res.text).toContain('25\u202f000 XOF');
    expect(res.text).toContain('ORDER-1042');
    expect(res.text).toContain('is not a confirmation of payment');
    expect(tokenIn(res.text)).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toMatch(/pay_bid=[A-Za-z0-9_-]{24}/);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Path=\/pay(;|$)/);
    expect(cookie).toMatch(/Max-Age=7200/);
    const css = await request(payApp).get('/pay/assets/pay.css');
    expect(css.status).toBe(200);
    expect(css.headers['content-type']).toMatch(/^text\/css/);
  });

  it('sets the browser cookie SameSite=Lax (it survives a return from a 3-D Secure or mobile-money page) and refreshes its lifetime on each view', async () => {
    const agent = request.agent(payApp);
    const first = await agent.get(`/pay/${checkout.code}?amount=100`);
    const firstSecond = Math.floor(Date.now() / 1000);
    const firstCookie = (first.headers['set-cookie'] as unknown as string[])[0] as string;
    const id = /pay_bid=([A-Za-z0-9_-]{24})/.exec(firstCookie)?.[1];
    expect(id).toBeDefined();
    expect(firstCookie).toMatch(/; HttpOnly/);
    expect(firstCookie).toMatch(/; SameSite=Lax/);
    expect(firstCookie).not.toMatch(/SameSite=(Strict|None)/);
    const expiresOf = (cookie: string) => Date.parse(/Expires=([^;]+)/.exec(cookie)?.[1] as string);
    // A cookie's Expires has a resolution of one second: a later view must fall in a later second of the real clock.
    await until(() => Math.floor(Date.now() / 1000) > firstSecond);
    const second = await agent.get(`/pay/${checkout.code}?amount=200`);
    const secondCookie = (second.headers['set-cookie'] as unknown as string[] | undefined)?.[0] as string;
    expect(secondCookie, 'the cookie is sent again on a later view').toBeDefined();
    expect(secondCookie).toContain(`pay_bid=${id};`);
    expect(secondCookie).toMatch(/Max-Age=7200/);
    expect(secondCookie).toMatch(/; SameSite=Lax/);
    expect(expiresOf(secondCookie)).toBeGreaterThan(expiresOf(firstCookie));
    // Both forms stay bound to the same browser: the older one still pays.
    const older = tokenIn(first.text);
    const paid = await agent.post(`/pay/${checkout.code}`).type('form').send({ token: older, method: 'mobile_money', phone: '+2250712345678' });
    expect(paid.status, paid.text).toBe(303);
  });

  it('HTML-escapes the description and the reference (the link\'s or the URL\'s) on the form and the result page', async () => {
    const script = '<script>alert("x")</script>';
    const escaped = '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;';
    const link = await createLink({ destination_account_id: xof.id, amount: 300, description: `Order ${script} & <b>co</b>`, reference: `REF-${script}` });
    const { agent, token, html } = await openPage(`/pay/${link.code}`);
    expect(html).not.toContain('<script');
    expect(html).not.toContain('<b>co</b>');
    expect(html).toContain(`Order ${escaped} &amp; &lt;b&gt;co&lt;/b&gt;`);
    expect(html).toContain(`REF-${escaped}`);
    const paid = await agent.post(`/pay/${link.code}`).type('form').send({ token, method: 'mobile_money', phone: '+2250712345678' });
    expect(paid.status, paid.text).toBe(303);
    const result = await agent.get(paid.headers.location as string);
    expect(result.text).not.toContain('<script');
    expect(result.text).toContain(`REF-${escaped}`);

    const fromUrl = await request(payApp).get(`/pay/${checkout.code}?amount=100&reference=${encodeURIComponent(`A${script}"'`)}`);
    expect(fromUrl.status).toBe(200);
    expect(fromUrl.text).not.toContain('<script');
    expect(fromUrl.text).toContain(`A${escaped}&quot;&#39;`);
  });

  it('a deactivated Checkout refuses payments (410) until getOrCreateCheckout reactivates the same one: same code, its page pays again', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const created = (await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: account.id })).body.data as { id: string; code: string };
    expect((await request(app).post(`${base(org.id)}/payment-links/${created.id}/deactivate`).set(bearer(owner))).body.data.status).toBe('inactive');
    expect((await request(payApp).get(`/pay/${created.code}?amount=100&reference=REACT-1`)).status).toBe(410);
    const again = await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: account.id });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ id: created.id, code: created.code, status: 'active' });
    expect(await testKnex()('payment_links').where({ destination_account_id: account.id, kind: 'checkout' })).toHaveLength(1);
    const { agent, token } = await openPage(`/pay/${created.code}?amount=100&reference=REACT-1`);
    expect((await agent.post(`/pay/${created.code}`).type('form').send({ token, method: 'mobile_money', phone: '+2250712345678' })).status).toBe(303);
  });

  it('asks the customer for the amount when neither the link nor the URL fixes it', async () => {
    const res = await request(payApp).get(`/pay/${checkout.code}`);
    expect(res.status).toBe(200);
    expect(res.text).toContain('name="amount"');
  });

  it('answers unknown links with 404 and deactivated, expired or paid links with 410, as clear pages', async () => {
    const unknown = await request(payApp).get('/pay/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    expect(unknown.status).toBe(404);
    expect(unknown.text).toContain('Payment link not found');
    expect((await request(payApp).get('/pay/short')).status).toBe(404);
    expect((await request(payApp).get('/pay/../../etc/passwd')).status).toBe(404);
    const elsewhere = await request(payApp).get('/elsewhere');
    expect({ status: elsewhere.status, type: elsewhere.headers['content-type'], page: elsewhere.text.includes('Page not found') }).toEqual({ status: 404, type: expect.stringMatching(/^text\/html/), page: true });

    const inactive = await createLink({ destination_account_id: xof.id, amount: 500 });
    await request(app).post(`${base(org.id)}/payment-links/${inactive.id}/deactivate`).set(bearer(owner));
    const gone = await request(payApp).get(`/pay/${inactive.code}`);
    expect(gone.status).toBe(410);
    expect(gone.text).toContain('deactivated');

    const expired = await createLink({ destination_account_id: xof.id, amount: 500 });
    await testKnex()('payment_links').where({ id: expired.id }).update({ expires_at: new Date(Date.now() - 1000) });
    const late = await request(payApp).get(`/pay/${expired.code}`);
    expect(late.status).toBe(410);
    expect(late.text).toContain('expired');
    expect(late.text).not.toMatch(/at .*\.ts:\d+/);
  });

  it('says so when the amount or the reference of the URL is invalid (400 page)', async () => {
    const cases: Array<[string, string]> = [
      ['amount=abc', 'amount in this link is not valid'],
      ['amount=1.5', 'whole number'],
      ['amount=-3', 'not valid'],
      ['amount=0', 'not valid'],
      ['amount=1e400', 'not valid'],
      ['amount={AMOUNT}&reference={REFERENCE}', 'placeholder'],
      ['amount=100&reference=%0Abad', 'reference in this link is not valid'],
      [`amount=100&reference=${'x'.repeat(129)}`, 'reference in this link is not valid'],
      ['amount=100&amount=200', 'parameter of this link is invalid'],
    ];
    for (const [query, text] of cases) {
      const res = await request(payApp).get(`/pay/${checkout.code}?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text, query).toContain(text);
    }
    const fixed = await createLink({ destination_account_id: xof.id, amount: 500, reference: 'INV-1' });
    expect((await request(payApp).get(`/pay/${fixed.code}?amount=400`)).status).toBe(400);
    expect((await request(payApp).get(`/pay/${fixed.code}?reference=INV-2`)).status).toBe(400);
    expect((await request(payApp).get(`/pay/${fixed.code}?amount=500&reference=INV-1`)).status).toBe(200);
    const bounded = await createLink({ destination_account_id: xof.id, minimum_amount: 100, maximum_amount: 200 });
    const over = await request(payApp).get(`/pay/${bounded.code}?amount=201`);
    expect(over.status).toBe(400);
    expect(over.text).toContain('at most 200 XOF');
  });

  it('accepts a signed amount and refuses it once edited or expired; a link requiring signatures refuses unsigned amounts', async () => {
    const signed = await request(app)
      .post(`${base(org.id)}/payment-links/${checkout.id}/signed-links`)
      .set(bearer(owner))
      .send({ amount: 7500, reference: 'ORDER-77' });
    const url = new URL(signed.body.data.url);
    const path = `${url.pathname}${url.search}`;
    expect((await request(payApp).get(path)).status).toBe(200);

    const edited = await request(payApp).get(path.replace('amount=7500', 'amount=75'));
    expect(edited.status).toBe(400);
    expect(edited.text).toContain('was changed');
    expect((await request(payApp).get(path.replace('reference=ORDER-77', 'reference=ORDER-78'))).status).toBe(400);
    expect((await request(payApp).get(path.replace(/exp=\d+/, 'exp=9999999999'))).status).toBe(400);
    expect((await request(payApp).get(path.replace(/&sig=[^&]+/, ''))).status).toBe(400);

    const past = Math.floor(Date.now() / 1000) - 10;
    const config = testConfig();
    const sig = signAmount(config.paySecret, { linkId: checkout.id, amountMinor: 7500n, reference: 'ORDER-77', expiresAt: past });
    const expired = await request(payApp).get(`/pay/${checkout.code}?amount=7500&reference=ORDER-77&exp=${past}&sig=${sig}`);
    expect(expired.status).toBe(410);

    const strictAccount = await createOrgAccount(org, { currency: 'XOF' });
    const strict = await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: strictAccount.id, require_signed_amount: true });
    expect((await request(payApp).get(`/pay/${strict.body.data.code}?amount=100&reference=A`)).status).toBe(400);
    expect((await request(payApp).get(`/pay/${strict.body.data.code}`)).status).toBe(400);
    const strictSigned = await request(app)
      .post(`${base(org.id)}/payment-links/${strict.body.data.id}/signed-links`)
      .set(bearer(owner))
      .send({ amount: 100, reference: 'A' });
    const strictUrl = new URL(strictSigned.body.data.url);
    expect((await request(payApp).get(`${strictUrl.pathname}${strictUrl.search}`)).status).toBe(200);
  });
});

describe('POST /pay/:code', () => {
  it('pays with sandbox mobile money: pending then succeeded, credited on the ledger, visible to the integrator', async () => {
    const before = await balanceOf(testKnex(), xof.ledgerAccountId);
    const { agent, token } = await openPage(signedCheckout(12500, `ORDER-5001`));
    const res = await agent.post(`/pay/${checkout.code}`).type('form').send({ token, method: 'mobile_money', phone: '+225 07 12 34 56 78' });
    expect(res.status, res.text).toBe(303);
    const location = res.headers.location as string;
    expect(location).toMatch(new RegExp(`^/pay/${checkout.code}/payments/[0-9a-f-]{36}\\?t=`));
    const result = await agent.get(location);
    expect(result.status).toBe(200);
    expect(result.text).toContain('Payment confirmed');
    expect(result.text).toContain('ORDER-5001');
    expect(result.text).toContain('is not a confirmation of payment');
    expect(await balanceOf(testKnex(), xof.ledgerAccountId)).toBe(before + 12_500n);

    const list = await request(app).get(`${base(org.id)}/payments?reference=ORDER-5001`).set(bearer(owner));
    expect(list.status).toBe(200);
    expect(list.body.data.data).toHaveLength(1);
    const payment = list.body.data.data[0];
    expect(payment).toMatchObject({
      link_id: checkout.id,
      organization_id: org.id,
      destination_account_id: xof.id,
      amount: 12500,
      amount_minor: '12500',
      currency: 'XOF',
      reference: 'ORDER-5001',
      method: 'mobile_money',
      payer_last4: '5678',
      status: 'succeeded',
      failure_reason: null,
    });
    const posting = await testKnex()('postings').where({ id: payment.ledger_posting_id }).first();
    expect(posting).toMatchObject({ kind: 'payment_link.payment', reference: payment.id });
    expect(posting.metadata).toMatchObject({ payment_id: payment.id, link_id: checkout.id, reference: 'ORDER-5001' });
    expect(posting.metadata.description).toBeUndefined(); // the statement line is built from the kind and the reference
    // The destination account's statement line names the order. Statements stop 15 s before
    // now (the settle margin): the statement is read by an app whose clock is a minute ahead.
    const settledApp = await buildTestApp({ now: () => new Date(Date.now() + 60_000) });
    const statement = await request(settledApp).get(statementUrl(org.id, xof.id, {})).set(bearer(owner));
    expect(statement.status, JSON.stringify(statement.body)).toBe(200);
    const line = statement.body.data.lines.find((l: { posting_id: string }) => l.posting_id === payment.ledger_posting_id);
    expect(line).toMatchObject({ posting_kind: 'payment_link.payment', description: 'Payment received - ORDER-5001', amount: '12500' });
    const one = await request(app).get(`${base(org.id)}/payments/${payment.id}`).set(bearer(owner));
    expect(one.status).toBe(200);
    expect(one.body.data).toEqual(payment);
  });

  it('opens a receipt only with its own token: missing, forged or another payment\'s token answer 404', async () => {
    const pay = async (reference: string) => {
      const { agent, token } = await openPage(`/pay/${checkout.code}?amount=1500&reference=${reference}`);
      const res = await agent.post(`/pay/${checkout.code}`).type('form').send({ token, method: 'mobile_money', phone: '+2250712345678' });
      expect(res.status, res.text).toBe(303);
      const location = new URL(res.headers.location as string, 'http://pay.test');
      return { path: location.pathname, t: location.searchParams.get('t') as string };
    };
    const first = await pay('RECEIPT-1');
    const second = await pay('RECEIPT-2');
    expect(first.t).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const genuine = await request(payApp).get(`${first.path}?t=${first.t}`);
    expect(genuine.status).toBe(200);
    expect(genuine.text).toContain('RECEIPT-1');
    const flipped = `${first.t[0] === 'A' ? 'B' : 'A'}${first.t.slice(1)}`;
    for (const [what, query] of [
      ['no token', ''],
      ['an empty token', '?t='],
      ['a forged token', `?t=${flipped}`],
      ['a truncated token', `?t=${first.t.slice(0, -1)}`],
      ["another payment's token", `?t=${second.t}`],
    ] as const) {
      const res = await request(payApp).get(`${first.path}${query}`);
      expect(res.status, what).toBe(404);
      expect(res.text, what).toContain('This payment does not exist.');
      expect(res.text, what).not.toContain('RECEIPT-1');
    }
  });

  it('never creates two payments for a double submit of one form', async () => {
    const before = await balanceOf(testKnex(), xof.ledgerAccountId);
    const { agent, token } = await openPage(signedCheckout(3000, `ORDER-DOUBLE`));
    const form = { token, method: 'mobile_money', phone: '+2250712340000' };
    const [a, b, c] = await Promise.all([1, 2, 3].map(() => agent.post(`/pay/${checkout.code}`).type('form').send(form)));
    expect([a?.status, b?.status, c?.status]).toEqual([303, 303, 303]);
    expect(new Set([a?.headers.location, b?.headers.location, c?.headers.location]).size).toBe(1);
    const later = await agent.post(`/pay/${checkout.code}`).type('form').send({ ...form, phone: '+2250712349999' });
    expect(later.headers.location).toBe(a?.headers.location);
    expect(await testKnex()('payments').where({ reference: 'ORDER-DOUBLE' })).toHaveLength(1);
    expect(await balanceOf(testKnex(), xof.ledgerAccountId)).toBe(before + 3_000n);
  });

  it('refuses to pay an order (reference) twice on one link, from a fresh page or an older form', async () => {
    const older = await openPage(signedCheckout(800, `ORDER-ONCE`));
    const { agent, token } = await openPage(signedCheckout(800, `ORDER-ONCE`));
    expect((await agent.post(`/pay/${checkout.code}`).type('form').send({ token, method: 'mobile_money', phone: '+2250712345678' })).status).toBe(303);
    // Showing the page does not probe the reference: only paying does.
    const fresh = await openPage(signedCheckout(800, `ORDER-ONCE`));
    const again = await fresh.agent.post(`/pay/${checkout.code}`).type('form').send({ token: fresh.token, method: 'mobile_money', phone: '+2250712345678' });
    expect(again.status).toBe(409);
    expect(again.text).toContain('already been paid');
    const late = await older.agent.post(`/pay/${checkout.code}`).type('form').send({ token: older.token, method: 'mobile_money', phone: '+2250712345678' });
    expect(late.status).toBe(409);
    expect(await testKnex()('payments').where({ reference: 'ORDER-ONCE' })).toHaveLength(1);
    // A failed attempt does not block a retry.
    const failing = await openPage(signedCheckout(800, `ORDER-RETRY`));
    await failing.agent.post(`/pay/${checkout.code}`).type('form').send({ token: failing.token, method: 'mobile_money', phone: '+2250700000001' });
    const retry = await openPage(signedCheckout(800, `ORDER-RETRY`));
    expect((await retry.agent.post(`/pay/${checkout.code}`).type('form').send({ token: retry.token, method: 'mobile_money', phone: '+2250712345678' })).status).toBe(303);
    expect((await testKnex()('payments').where({ reference: 'ORDER-RETRY' }).orderBy('created_at')).map((p: { status: string }) => p.status)).toEqual(['failed', 'succeeded']);
  });

  it('refuses a form without the browser cookie, with a forged or another link’s token (403 page)', async () => {
    const { agent, token } = await openPage(`/pay/${checkout.code}?amount=100`);
    const noCookie = await request(payApp).post(`/pay/${checkout.code}`).type('form').send({ token, method: 'mobile_money', phone: '+2250712345678' });
    expect(noCookie.status).toBe(403);
    expect(noCookie.text).toContain('Open the payment link again');
    const forged = `${token.split('.')[0]}.AAAA`;
    expect((await agent.post(`/pay/${checkout.code}`).type('form').send({ token: forged, method: 'mobile_money', phone: '+2250712345678' })).status).toBe(403);
    const other = await createLink({ destination_account_id: xof.id, amount: 100 });
    expect((await agent.post(`/pay/${other.code}`).type('form').send({ token, method: 'mobile_money', phone: '+2250712345678' })).status).toBe(403);
    expect((await agent.post(`/pay/${checkout.code}`).type('form').send({ method: 'mobile_money' })).status).toBe(403);
    // A tampered amount in the token payload breaks its signature.
    const [body, mac] = token.split('.') as [string, string];
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString()) as { a: string };
    payload.a = '1';
    const tampered = `${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${mac}`;
    expect((await agent.post(`/pay/${checkout.code}`).type('form').send({ token: tampered, method: 'mobile_money', phone: '+2250712345678' })).status).toBe(403);
  });

  it('shows the form again with the error for bad payer details or an amount out of bounds (400)', async () => {
    const { agent, token } = await openPage(`/pay/${checkout.code}?amount=100`);
    const badPhone = await agent.post(`/pay/${checkout.code}`).type('form').send({ token, method: 'mobile_money', phone: '0712' });
    expect(badPhone.status).toBe(400);
    expect(badPhone.text).toContain('international format');
    expect(tokenIn(badPhone.text)).toBe(token);
    const realCard = await agent.post(`/pay/${checkout.code}`).type('form').send({ token, method: 'card', card_number: '5555555555554444', card_expiry: '12/40', card_cvc: '123' });
    expect(realCard.status).toBe(400);
    expect(realCard.text).toContain('only test cards');
    const expiredCard = await agent.post(`/pay/${checkout.code}`).type('form').send({ token, method: 'card', card_number: '4242424242424242', card_expiry: '01/20', card_cvc: '123' });
    expect(expiredCard.status).toBe(400);
    expect((await agent.post(`/pay/${checkout.code}`).type('form').send({ token, method: 'cash' })).status).toBe(400);

    const bounded = await createLink({ destination_account_id: xof.id, minimum_amount: 100, maximum_amount: 200 });
    const open = await openPage(`/pay/${bounded.code}`);
    for (const amount of ['50', '201', '1.5', 'abc', '']) {
      const res = await open.agent.post(`/pay/${bounded.code}`).type('form').send({ token: open.token, amount, method: 'mobile_money', phone: '+2250712345678' });
      expect(res.status, amount).toBe(400);
    }
    expect(await testKnex()('payments').where({ link_id: bounded.id })).toHaveLength(0);
    const ok = await open.agent.post(`/pay/${bounded.code}`).type('form').send({ token: open.token, amount: '150', method: 'card', card_number: '4242 4242 4242 4242', card_expiry: '12/40', card_cvc: '123' });
    expect(ok.status).toBe(303);
    const payment = await testKnex()('payments').where({ link_id: bounded.id }).first();
    expect(payment).toMatchObject({ status: 'succeeded', amount_minor: '150', method: 'card', payer_last4: '4242' });
    const posting = await testKnex()('postings').where({ id: payment.posting_id }).first();
    expect(posting.metadata.reference).toBeUndefined();
    expect(posting.metadata.description).toBeUndefined();
  });

  it('records sandbox failures with their reason and moves no money', async () => {
    const before = await balanceOf(testKnex(), xof.ledgerAccountId);
    for (const [phone, reason] of [
      ['+2250700000001', 'insufficient_funds'],
      ['+2250700000002', 'approval_rejected'],
      ['+2250700000003', 'payer_not_found'],
    ]) {
      const { agent, token } = await openPage(signedCheckout(900, `FAIL-${reason}`));
      const res = await agent.post(`/pay/${checkout.code}`).type('form').send({ token, method: 'mobile_money', phone });
      const page = await agent.get(res.headers.location as string);
      expect(page.text).toContain('Payment failed');
      const list = await request(app).get(`${base(org.id)}/payments?reference=FAIL-${reason}&status=failed`).set(bearer(owner));
      expect(list.body.data.data).toMatchObject([{ status: 'failed', failure_reason: reason, ledger_posting_id: null }]);
    }
    const { agent, token } = await openPage(signedCheckout(900, `FAIL-card`));
    await agent.post(`/pay/${checkout.code}`).type('form').send({ token, method: 'card', card_number: '4000000000000002', card_expiry: '12/40', card_cvc: '123' });
    const card = await request(app).get(`${base(org.id)}/payments?reference=FAIL-card`).set(bearer(owner));
    expect(card.body.data.data[0]).toMatchObject({ status: 'failed', failure_reason: 'card_declined' });
    expect(await balanceOf(testKnex(), xof.ledgerAccountId)).toBe(before);
  });

  it('keeps a delayed sandbox payment pending, then settles it once', async () => {
    const { agent, token } = await openPage(signedCheckout(4000, `ORDER-SLOW`));
    const res = await agent.post(`/pay/${checkout.code}`).type('form').send({ token, method: 'mobile_money', phone: '+2250700000009' });
    const pending = await agent.get(res.headers.location as string);
    expect(pending.text).toContain('Waiting for confirmation');
    expect(pending.text).toContain('http-equiv="refresh"');
    const id = /payments\/([0-9a-f-]{36})/.exec(res.headers.location as string)?.[1] as string;
    const api = await request(app).get(`${base(org.id)}/payments/${id}`).set(bearer(owner));
    expect(api.body.data.status).toBe('pending');
    expect(api.body.data.completed_at).toBeNull();
    const future = new Date(Date.now() + 60_000);
    const [first, second] = await Promise.all([app.services.payments.settle(id, future), app.services.payments.settle(id, future)]);
    expect(first.status).toBe('succeeded');
    expect(second.postingId).toBe(first.postingId);
    expect(await testKnex()('postings').where({ kind: 'payment_link.payment', reference: id })).toHaveLength(1);
  });

  it('GET /pay/:code neither reads nor settles payments: an already paid or a due pending order still shows its page', async () => {
    const paid = await openPage(`/pay/${checkout.code}?amount=650&reference=ORDER-GET-SAFE`);
    expect((await paid.agent.post(`/pay/${checkout.code}`).type('form').send({ token: paid.token, method: 'mobile_money', phone: '+2250712345678' })).status).toBe(303);
    const slow = await openPage(`/pay/${checkout.code}?amount=650&reference=ORDER-GET-SLOW`);
    const slowRes = await slow.agent.post(`/pay/${checkout.code}`).type('form').send({ token: slow.token, method: 'mobile_money', phone: '+2250700000009' });
    const slowId = /payments\/([0-9a-f-]{36})/.exec(slowRes.headers.location as string)?.[1] as string;
    await testKnex()('payments').where({ id: slowId }).update({ settle_after: new Date(Date.now() - 1000) });

    const calls: string[] = [];
    const methods = Object.getOwnPropertyNames(PaymentsRepository.prototype).filter((name) => name !== 'constructor');
    const spies = methods.map((name) =>
      vi.spyOn(PaymentsRepository.prototype as unknown as Record<string, (...args: unknown[]) => unknown>, name).mockImplementation(() => {
        calls.push(name);
        throw new Error(`PaymentsRepository.${name} called by a GET`);
      }),
    );
    const settle = vi.spyOn(app.services.payments, 'settle');
    try {
      for (const reference of ['ORDER-GET-SAFE', 'ORDER-GET-SLOW']) {
        const page = await request(payApp).get(`/pay/${checkout.code}?amount=650&reference=${reference}`);
        expect(page.status, page.text).toBe(200);
        expect(page.text).toContain(reference);
      }
    } finally {
      for (const spy of spies) spy.mockRestore();
      settle.mockRestore();
    }
    expect(calls).toEqual([]);
    expect(settle).not.toHaveBeenCalled();
    expect(await testKnex()('payments').where({ id: slowId }).first()).toMatchObject({ status: 'pending' });
    await app.services.payments.settle(slowId);
  });

  it('lets a one-off link be paid once, then shows it as paid (410) and completed', async () => {
    const link = await createLink({ destination_account_id: xof.id, amount: 2000, reference: 'INV-9' });
    const first = await openPage(`/pay/${link.code}`);
    const second = await openPage(`/pay/${link.code}`);
    const paid = await first.agent.post(`/pay/${link.code}`).type('form').send({ token: first.token, method: 'mobile_money', phone: '+2250712345678' });
    expect(paid.status).toBe(303);
    const again = await second.agent.post(`/pay/${link.code}`).type('form').send({ token: second.token, method: 'mobile_money', phone: '+2250712345678' });
    expect(again.status).toBe(410);
    expect(again.text).toContain('already been paid');
    expect((await request(payApp).get(`/pay/${link.code}`)).status).toBe(410);
    const api = await request(app).get(`${base(org.id)}/payment-links/${link.id}`).set(bearer(owner));
    expect(api.body.data.status).toBe('completed');
    const deactivate = await request(app).post(`${base(org.id)}/payment-links/${link.id}/deactivate`).set(bearer(owner));
    expect(deactivate.status).toBe(409);
    expect(deactivate.body).toMatchObject({ success: false, error: 'PaymentLinkNotActive' });
    // The result page of the paying browser still answers.
    expect((await first.agent.get(paid.headers.location as string)).text).toContain('Payment confirmed');
  });

  it('lets only one of several customers paying a one-off link at once succeed; concurrent orders on a Checkout all land once', async () => {
    const link = await createLink({ destination_account_id: xof.id, amount: 700 });
    const pages = await Promise.all([1, 2, 3, 4, 5].map(() => openPage(`/pay/${link.code}`)));
    const results = await Promise.all(
      pages.map(({ agent, token }) => agent.post(`/pay/${link.code}`).type('form').send({ token, method: 'mobile_money', phone: '+2250712345678' })),
    );
    expect(results.filter((r) => r.status === 303)).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 303)) expect([409, 410]).toContain(r.status);
    expect(await testKnex()('payments').where({ link_id: link.id })).toHaveLength(1);

    const before = await balanceOf(testKnex(), xof.ledgerAccountId);
    const orders = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => openPage(`/pay/${checkout.code}?amount=${i * 100}&reference=PAR-${i}`)));
    const paid = await Promise.all(
      orders.map(({ agent, token }) => agent.post(`/pay/${checkout.code}`).type('form').send({ token, method: 'mobile_money', phone: '+2250712345678' })),
    );
    expect(paid.map((r) => r.status)).toEqual([303, 303, 303, 303, 303, 303]);
    expect(await balanceOf(testKnex(), xof.ledgerAccountId)).toBe(before + 2_100n);
  });

  it('refuses a form opened from a signed URL once that URL has expired (410), and takes it before', async () => {
    const config = testConfig();
    const signedPath = (reference: string, expiresAt: number) =>
      `/pay/${checkout.code}?amount=600&reference=${reference}&exp=${expiresAt}&sig=${signAmount(config.paySecret, { linkId: checkout.id, amountMinor: 600n, reference, expiresAt })}`;
    const longLived = await openPage(signedPath('SIGNED-OK', Math.floor(Date.now() / 1000) + 3600));
    const ok = await longLived.agent.post(`/pay/${checkout.code}`).type('form').send({ token: longLived.token, method: 'mobile_money', phone: '+2250712345678' });
    expect(ok.status, ok.text).toBe(303);

    const expiresAt = Math.floor(Date.now() / 1000) + 2;
    const { agent, token } = await openPage(signedPath('SIGNED-LATE', expiresAt));
    // The link's expiry is checked against the real clock: the form is sent once it has passed.
    await until(() => Date.now() > expiresAt * 1000);
    const late = await agent.post(`/pay/${checkout.code}`).type('form').send({ token, method: 'mobile_money', phone: '+2250712345678' });
    expect(late.status, late.text).toBe(410);
    expect(late.text).toContain('signed payment link has expired');
    expect(await testKnex()('payments').where({ reference: 'SIGNED-LATE' })).toHaveLength(0);
  });

  it('refuses a form whose amount was not signed once the link requires signed amounts (400); a signed one still pays', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const own = (await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: account.id })).body.data;
    const typed = await openPage(`/pay/${own.code}`);
    const unsigned = await openPage(`/pay/${own.code}?amount=300&reference=UNSIGNED-1`);
    const signedUrl = new URL(
      (await request(app).post(`${base(org.id)}/payment-links/${own.id}/signed-links`).set(bearer(owner)).send({ amount: 300, reference: 'SIGNED-1' })).body.data.url,
    );
    const signed = await openPage(`${signedUrl.pathname}${signedUrl.search}`);

    const strict = await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: account.id, require_signed_amount: true });
    expect(strict.body.data.require_signed_amount).toBe(true);

    const typedRes = await typed.agent.post(`/pay/${own.code}`).type('form').send({ token: typed.token, amount: '300', method: 'mobile_money', phone: '+2250712345678' });
    expect(typedRes.status, typedRes.text).toBe(400);
    expect(typedRes.text).toContain('needs an amount signed by the merchant');
    const unsignedRes = await unsigned.agent.post(`/pay/${own.code}`).type('form').send({ token: unsigned.token, method: 'mobile_money', phone: '+2250712345678' });
    expect(unsignedRes.status, unsignedRes.text).toBe(400);
    expect(unsignedRes.text).toContain('accepts only signed amounts');
    expect(await testKnex()('payments').where({ link_id: own.id })).toHaveLength(0);

    const signedRes = await signed.agent.post(`/pay/${own.code}`).type('form').send({ token: signed.token, method: 'mobile_money', phone: '+2250712345678' });
    expect(signedRes.status, signedRes.text).toBe(303);
    expect(await testKnex()('payments').where({ link_id: own.id })).toMatchObject([{ reference: 'SIGNED-1', amount_minor: '300', status: 'succeeded' }]);
  });

  it('on a link requiring signed amounts, the signature covers the reference: an edited reference or amount is refused on GET and on POST', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const strict = (await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: account.id, require_signed_amount: true })).body
      .data as { id: string; code: string };
    const signed = await request(app).post(`${base(org.id)}/payment-links/${strict.id}/signed-links`).set(bearer(owner)).send({ amount: 5000, reference: 'SIGNED-REF-1' });
    const url = new URL(signed.body.data.url);
    const path = `${url.pathname}${url.search}`;

    // GET: the URL's reference or amount edited breaks the signature.
    const editedReference = await request(payApp).get(path.replace('reference=SIGNED-REF-1', 'reference=SIGNED-REF-2'));
    expect(editedReference.status).toBe(400);
    expect(editedReference.text).toContain('was changed');
    expect((await request(payApp).get(path.replace('amount=5000', 'amount=50'))).status).toBe(400);

    // POST: the form of the signed page, with an edited reference or amount, is refused.
    const { agent, token } = await openPage(path);
    const form = { token, method: 'mobile_money', phone: '+2250712345678' };
    for (const edit of [{ reference: 'SIGNED-REF-2' }, { reference: '' }, { amount: '50' }, { amount: 'abc' }]) {
      const res = await agent.post(`/pay/${strict.code}`).type('form').send({ ...form, ...edit });
      expect(res.status, JSON.stringify(edit)).toBe(400);
      expect(res.text).toContain('was changed');
    }
    const [body, mac] = token.split('.') as [string, string];
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString()) as { r: string };
    payload.r = 'SIGNED-REF-2';
    const tampered = `${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${mac}`;
    expect((await agent.post(`/pay/${strict.code}`).type('form').send({ ...form, token: tampered })).status).toBe(403);
    expect(await testKnex()('payments').where({ link_id: strict.id })).toHaveLength(0);

    // The same values as the page's are not an edit; the untouched form pays the signed terms.
    const ok = await agent.post(`/pay/${strict.code}`).type('form').send({ ...form, amount: '5000', reference: 'SIGNED-REF-1' });
    expect(ok.status, ok.text).toBe(303);
    expect(await testKnex()('payments').where({ link_id: strict.id })).toMatchObject([{ reference: 'SIGNED-REF-1', amount_minor: '5000' }]);

    // A fixed-amount link requiring signatures refuses an unsigned reference from the URL too.
    const fixed = await createLink({ destination_account_id: account.id, amount: 900, require_signed_amount: true });
    const unsignedReference = await request(payApp).get(`/pay/${fixed.code}?reference=MINE`);
    expect(unsignedReference.status).toBe(400);
    expect(unsignedReference.text).toContain('accepts only signed amounts');
    expect((await request(payApp).get(`/pay/${fixed.code}`)).status).toBe(200);
    const fixedSigned = new URL(
      (await request(app).post(`${base(org.id)}/payment-links/${fixed.id}/signed-links`).set(bearer(owner)).send({ amount: 900, reference: 'FIXED-1' })).body.data.url,
    );
    expect((await request(payApp).get(`${fixedSigned.pathname}${fixedSigned.search}`)).status).toBe(200);
    expect((await request(payApp).get(`${fixedSigned.pathname}${fixedSigned.search.replace('FIXED-1', 'FIXED-2')}`)).status).toBe(400);
  });

  it('refuses a payment when the destination account became inactive', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const link = await createLink({ destination_account_id: account.id, amount: 100 });
    const { agent, token } = await openPage(`/pay/${link.code}`);
    await testKnex()('organization_accounts').where({ id: account.id }).update({ status: 'inactive' });
    const res = await agent.post(`/pay/${link.code}`).type('form').send({ token, method: 'mobile_money', phone: '+2250712345678' });
    expect(res.status).toBe(409);
    expect((await request(payApp).get(`/pay/${link.code}`)).status).toBe(409);
  });
});

describe('the payment page and the organisation behind the link', () => {
  /** An organisation with a Checkout and a one-off link, each with a form opened while it was active. */
  async function merchant() {
    const organization = await createOrganization();
    const token = await accessTokenFor(app, await createMember(organization, 'owner'));
    const account = await createOrgAccount(organization, { currency: 'XOF' });
    const own = (await request(app).post(`${base(organization.id)}/checkout`).set(bearer(token)).send({ destination_account_id: account.id })).body.data as { id: string; code: string };
    const link = await createLink({ destination_account_id: account.id, amount: 500 }, organization, token);
    const forms = { checkout: await openPage(`/pay/${own.code}?amount=700&reference=ORG-1`), link: await openPage(`/pay/${link.code}`) };
    return { organization, account, codes: { checkout: own.code, link: link.code }, forms };
  }

  async function expectRefused(m: Awaited<ReturnType<typeof merchant>>, label: string): Promise<void> {
    for (const kind of ['checkout', 'link'] as const) {
      const page = await request(payApp).get(`/pay/${m.codes[kind]}`);
      expect(page.status, `${label} GET ${kind}`).toBe(410);
      expect(page.text).toContain('Payments unavailable');
      const { agent, token } = m.forms[kind];
      const post = await agent.post(`/pay/${m.codes[kind]}`).type('form').send({ token, method: 'mobile_money', phone: '+2250712345678' });
      expect(post.status, `${label} POST ${kind}`).toBe(410);
      expect(post.text).toContain('does not accept payments');
    }
    expect(await testKnex()('payments').where({ organization_id: m.organization.id }), label).toHaveLength(0);
  }

  it.each(['inactive', 'suspended'] as const)('refuses payments (410) on every link of a %s organisation, pages and forms opened before alike', async (status) => {
    const m = await merchant();
    await testKnex()('organizations').where({ id: m.organization.id }).update({ status });
    await expectRefused(m, status);
    // Active again: the same forms pay.
    await testKnex()('organizations').where({ id: m.organization.id }).update({ status: 'active' });
    const { agent, token } = m.forms.link;
    expect((await agent.post(`/pay/${m.codes.link}`).type('form').send({ token, method: 'mobile_money', phone: '+2250712345678' })).status).toBe(303);
  });

  it('refuses payments (410) while the payment links module is locked or not enabled; a read-only module still takes them', async () => {
    const locked = await merchant();
    await testKnex()('organization_modules').where({ organization_id: locked.organization.id, module: 'payment_links' }).update({ access: 'locked' });
    await expectRefused(locked, 'locked');

    const disabled = await merchant();
    await testKnex()('organization_modules').where({ organization_id: disabled.organization.id, module: 'payment_links' }).delete();
    await expectRefused(disabled, 'not enabled');

    const readOnly = await merchant();
    await testKnex()('organization_modules').where({ organization_id: readOnly.organization.id, module: 'payment_links' }).update({ access: 'read_only' });
    expect((await request(payApp).get(`/pay/${readOnly.codes.checkout}`)).status).toBe(200);
    const { agent, token } = readOnly.forms.checkout;
    expect((await agent.post(`/pay/${readOnly.codes.checkout}`).type('form').send({ token, method: 'mobile_money', phone: '+2250712345678' })).status).toBe(303);
  });
});

describe('the payment page rate limit', () => {
  it('counts in the injected rate-limit store (Redis with REDIS_URL) and answers 429 as a page once the POST budget is spent', async () => {
    const env = { RATE_LIMIT_ANONYMOUS: '30' }; // POST budget: 3 per window and IP; page views: 30.
    const inner = (await buildTestApp({ env })).rateLimitBackend;
    const prefixes: string[] = [];
    let increments = 0;
    const backend: RateLimitBackend = {
      kind: inner.kind,
      createStore(prefix) {
        prefixes.push(prefix);
        const store = inner.createStore(prefix);
        const increment = store.increment.bind(store);
        store.increment = (key) => {
          increments += 1;
          return increment(key);
        };
        return store;
      },
    };
    const limitedPay = createPayApp({ config: testConfig(env), logger: pino({ level: 'silent' }), paymentPage: app.services.paymentPage, rateLimitBackend: backend });
    expect(prefixes).toEqual(['pay']);

    const agent = request.agent(limitedPay);
    const page = await agent.get(`/pay/${checkout.code}?amount=100&reference=RATE-1`);
    expect(page.status).toBe(200);
    expect(page.headers.ratelimit).toMatch(/r=29/);
    const form = { token: tokenIn(page.text), method: 'mobile_money', phone: '0712' };
    for (let i = 0; i < 3; i += 1) expect((await agent.post(`/pay/${checkout.code}`).type('form').send(form)).status).toBe(400);
    const limited = await agent.post(`/pay/${checkout.code}`).type('form').send({ ...form, phone: '+2250712345678' });
    expect(limited.status).toBe(429);
    expect(limited.headers['content-type']).toMatch(/^text\/html/);
    expect(limited.text).toContain('Too many attempts');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(increments).toBe(5);
    expect(await testKnex()('payments').where({ reference: 'RATE-1' })).toHaveLength(0);
    // Page views have their own, larger budget.
    expect((await agent.get(`/pay/${checkout.code}?amount=100&reference=RATE-1`)).status).toBe(200);
  });
});

/**
 * A payments service whose sandbox timers would fire only in an hour (only the sweep settles),
 * its payment page, and a fresh organisation's Checkout; `pay` pays it and returns the result URL.
 */
async function sweepSetup() {
  const slowPayments = new PaymentsService(testKnex(), app.services.accounts, pino({ level: 'silent' }), { sandboxDelayMs: 3_600_000 });
  const slowPayApp = createPayApp({ config: testConfig(), logger: pino({ level: 'silent' }), paymentPage: new PaymentPageService(slowPayments, { paySecret: testConfig().paySecret }), rateLimitBackend: app.rateLimitBackend });
  // Earlier tests' payments are settled first, so each sweep here sees only this test's.
  await app.services.payments.sweepDue({ now: new Date(Date.now() + 7_200_000), batchSize: 10_000 });
  const own = await createOrganization();
  const token = await accessTokenFor(app, await createMember(own, 'owner'));
  const account = await createOrgAccount(own, { currency: 'XOF' });
  const ownCheckout = (await request(app).post(`${base(own.id)}/checkout`).set(bearer(token)).send({ destination_account_id: account.id })).body.data;
  const pay = async (amount: number, reference: string): Promise<string> => {
    const agent = request.agent(slowPayApp);
    const page = await agent.get(signedPath(ownCheckout, String(amount), BigInt(amount), reference));
    const res = await agent.post(`/pay/${ownCheckout.code}`).type('form').send({ token: tokenIn(page.text), method: 'mobile_money', phone: '+2250700000009' });
    expect(res.status, res.text).toBe(303);
    return res.headers.location as string;
  };
  return { slowPayments, slowPayApp, own, token, account, pay };
}

describe('GET /business/organizations/{orgId}/payments', () => {
  it('filters by link, reference and status, pages newest first, and keeps other organisations out', async () => {
    const own = await createOrganization();
    const token = await accessTokenFor(app, await createMember(own, 'owner'));
    const account = await createOrgAccount(own, { currency: 'EUR' });
    const ownCheckout = (await request(app).post(`${base(own.id)}/checkout`).set(bearer(token)).send({ destination_account_id: account.id })).body.data;
    const ids: string[] = [];
    for (const [amount, phone] of [['10.50', '+33612345678'], ['20', '+33600000001'], ['30.05', '+33612345678']] as const) {
      const { agent, token: form } = await openPage(signedPath(ownCheckout, amount, BigInt(Math.round(Number(amount) * 100)), `R-${amount}`));
      const res = await agent.post(`/pay/${ownCheckout.code}`).type('form').send({ token: form, method: 'mobile_money', phone });
      ids.push(/payments\/([0-9a-f-]{36})/.exec(res.headers.location as string)?.[1] as string);
    }
    const all = await request(app).get(`${base(own.id)}/payments`).set(bearer(token));
    expect(all.body.data.data.map((p: { id: string }) => p.id)).toEqual([...ids].reverse());
    expect(all.body.data.data[0]).toMatchObject({ amount: 30.05, amount_minor: '3005', currency: 'EUR' });
    const failed = await request(app).get(`${base(own.id)}/payments?status=failed`).set(bearer(token));
    expect(failed.body.data.data.map((p: { id: string }) => p.id)).toEqual([ids[1]]);
    const byLink = await request(app).get(`${base(own.id)}/payments?link_id=${ownCheckout.id}&limit=2`).set(bearer(token));
    expect(byLink.body.data).toMatchObject({ has_more: true, next_cursor: ids[1] });
    const next = await request(app).get(`${base(own.id)}/payments?link_id=${ownCheckout.id}&limit=2&starting_after=${ids[1]}`).set(bearer(token));
    expect(next.body.data.data.map((p: { id: string }) => p.id)).toEqual([ids[0]]);
    expect((await request(app).get(`${base(own.id)}/payments?reference=R-20`).set(bearer(token))).body.data.data).toHaveLength(1);

    // Another organisation sees none of them.
    const theirs = await request(app).get(`${base(org.id)}/payments?link_id=${ownCheckout.id}`).set(bearer(owner));
    expect(theirs.body.data.data).toEqual([]);
    const foreign = await request(app).get(`${base(org.id)}/payments/${ids[0]}`).set(bearer(owner));
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('PaymentNotFound');

    for (const query of ['status=paid', 'limit=0', 'limit=501', 'link_id=x', 'starting_after=00000000-0000-4000-8000-000000000000', 'other=1']) {
      expect((await request(app).get(`${base(own.id)}/payments?${query}`).set(bearer(token))).status, query).toBe(400);
    }
    expect((await request(app).get(`${base(own.id)}/payments/not-a-uuid`).set(bearer(token))).status).toBe(400);
  });

  it('never settles a due payment on a read; the sweep settles them a bounded batch at a time', async () => {
    const { slowPayments, slowPayApp, own, token, account, pay } = await sweepSetup();
    try {
      const locations: string[] = [];
      for (const i of [1, 2, 3]) locations.push(await pay(i * 1000, `SWEEP-${i}`));
      const mine = () => testKnex()('payments').where({ organization_id: own.id }).orderBy('reference');
      expect((await mine()).map((p: { status: string }) => p.status)).toEqual(['pending', 'pending', 'pending']);
      // Due now, as after a restart that lost the timers.
      await testKnex()('payments').where({ organization_id: own.id }).update({ settle_after: new Date(Date.now() - 1000) });

      const list = await request(app).get(`${base(own.id)}/payments`).set(bearer(token));
      expect(list.body.data.data.map((p: { status: string }) => p.status)).toEqual(['pending', 'pending', 'pending']);
      const one = await request(app).get(`${base(own.id)}/payments/${list.body.data.data[0].id}`).set(bearer(token));
      expect(one.body.data.status).toBe('pending');
      expect((await request(slowPayApp).get(locations[0] as string)).text).toContain('Waiting for confirmation');
      expect((await mine()).map((p: { status: string }) => p.status)).toEqual(['pending', 'pending', 'pending']);
      const before = await balanceOf(testKnex(), account.ledgerAccountId);

      expect(await slowPayments.sweepDue({ batchSize: 2 })).toBe(2);
      expect((await mine()).map((p: { status: string }) => p.status).sort()).toEqual(['pending', 'succeeded', 'succeeded']);
      expect(await slowPayments.sweepDue({ batchSize: 2 })).toBe(1);
      expect(await slowPayments.sweepDue({ batchSize: 2 })).toBe(0);
      expect((await mine()).map((p: { status: string }) => p.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
      expect(await balanceOf(testKnex(), account.ledgerAccountId)).toBe(before + 6_000n);
      expect((await request(slowPayApp).get(locations[0] as string)).text).toContain('Payment confirmed');
    } finally {
      await slowPayments.stop();
    }
  });

  it('pushes back a payment whose settlement fails, so a batch of failing payments never starves the others', async () => {
    const { slowPayments, own, account, pay } = await sweepSetup();
    try {
      for (const reference of ['BAD-1', 'BAD-2', 'BAD-3', 'GOOD-1', 'GOOD-2']) await pay(1000, reference);
      // All due; the three failing ones (more than a batch) are the oldest due.
      const now = Date.now();
      await testKnex()('payments').where({ organization_id: own.id }).andWhere('reference', 'like', 'BAD-%').update({ settle_after: new Date(now - 10_000) });
      await testKnex()('payments').where({ organization_id: own.id }).andWhere('reference', 'like', 'GOOD-%').update({ settle_after: new Date(now - 1_000) });
      const mine = async () =>
        Object.fromEntries(
          ((await testKnex()('payments').where({ organization_id: own.id })) as Array<{ reference: string; status: string }>).map((p) => [p.reference, p.status]),
        );
      const bad = new Set(((await testKnex()('payments').where({ organization_id: own.id }).andWhere('reference', 'like', 'BAD-%')) as Array<{ id: string }>).map((p) => p.id));
      // The settlement of the BAD ones breaks inside its transaction (the sweep claims and
      // settles each payment in one transaction).
      const markSucceeded = PaymentsRepository.prototype.markSucceeded;
      const settle = vi.spyOn(PaymentsRepository.prototype, 'markSucceeded').mockImplementation(async function (this: PaymentsRepository, id, postingId) {
        if (bad.has(id)) throw new Error('settlement broken');
        return markSucceeded.call(this, id, postingId);
      });

      expect(await slowPayments.sweepDue({ batchSize: 2 })).toBe(0); // BAD-1 and BAD-2 fail
      expect(await slowPayments.sweepDue({ batchSize: 2 })).toBe(1); // BAD-3 fails, GOOD-1 settles
      expect(await slowPayments.sweepDue({ batchSize: 2 })).toBe(1); // GOOD-2 settles
      expect(await slowPayments.sweepDue({ batchSize: 2 })).toBe(0);
      expect(await mine()).toEqual({ 'BAD-1': 'pending', 'BAD-2': 'pending', 'BAD-3': 'pending', 'GOOD-1': 'succeeded', 'GOOD-2': 'succeeded' });
      // The failing ones were pushed back about a minute, not dropped: once settling works again they settle.
      const deferred = (await testKnex()('payments').whereIn('id', [...bad])) as Array<{ settle_after: Date }>;
      for (const p of deferred) expect(new Date(p.settle_after).getTime()).toBeGreaterThan(now + 50_000);
      settle.mockRestore();
      expect(await slowPayments.sweepDue({ batchSize: 2 })).toBe(0);
      expect(await slowPayments.sweepDue({ now: new Date(Date.now() + 120_000), batchSize: 10 })).toBe(3);
      expect(Object.values(await mine())).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded']);
      expect(await balanceOf(testKnex(), account.ledgerAccountId)).toBe(5_000n);
    } finally {
      await slowPayments.stop();
    }
  });

  it('several instances sweeping at once settle each due payment once, and each counts only what it settled', async () => {
    const { slowPayments, own, account, pay } = await sweepSetup();
    // One pool per instance on PostgreSQL; the one connection on the embedded back-end.
    const url = await testDatabaseUrl();
    const pools = databaseKind() === 'postgres' ? [0, 1, 2].map(() => createKnex(url, 'postgres', 4)) : [];
    const instances = (pools.length ? pools : [testKnex(), testKnex(), testKnex()]).map(
      (knex) => new PaymentsService(knex, new AccountService(knex, { cursorSecret: testConfig().paySecret }), pino({ level: 'silent' }), { sandboxDelayMs: 3_600_000 }),
    );
    try {
      for (let i = 1; i <= 12; i += 1) await pay(100 * i, `MANY-${i}`);
      // Due long ago, and swept "then": no other test's payment is due that early.
      const then = new Date('2001-01-01T00:00:10Z');
      await testKnex()('payments').where({ organization_id: own.id }).update({ settle_after: new Date('2001-01-01T00:00:00Z') });
      const before = await balanceOf(testKnex(), account.ledgerAccountId);
      const counts = await Promise.all(instances.map((payments) => payments.sweepDue({ now: then, batchSize: 100 })));
      expect(counts.reduce((a, b) => a + b, 0)).toBe(12);
      const statuses = ((await testKnex()('payments').where({ organization_id: own.id })) as Array<{ status: string }>).map((p) => p.status);
      expect(statuses).toEqual(Array(12).fill('succeeded'));
      expect(await balanceOf(testKnex(), account.ledgerAccountId)).toBe(before + 7_800n);
      expect(await Promise.all(instances.map((payments) => payments.sweepDue({ now: then, batchSize: 100 })))).toEqual([0, 0, 0]);
      await expectLedgerInvariants(testKnex());
    } finally {
      await Promise.all(instances.map((payments) => payments.stop()));
      await slowPayments.stop();
      for (const knex of pools) await knex.destroy();
    }
  });

  it('stop() resolves only once a settlement fired by a timer has finished, and schedules no more', async () => {
    const quickPayments = new PaymentsService(testKnex(), app.services.accounts, pino({ level: 'silent' }), { sandboxDelayMs: 500 });
    const quickPayApp = createPayApp({ config: testConfig(), logger: pino({ level: 'silent' }), paymentPage: new PaymentPageService(quickPayments, { paySecret: testConfig().paySecret }), rateLimitBackend: app.rateLimitBackend });
    const realSettle = quickPayments.settle.bind(quickPayments);
    let finished = 0;
    const settle = vi.spyOn(quickPayments, 'settle').mockImplementation(async (id, at) => {
      const payment = await realSettle(id, at);
      finished += 1;
      return payment;
    });
    // A slow commit: the settlement is still under way when the shutdown starts.
    const markSucceeded = PaymentsRepository.prototype.markSucceeded;
    const slowMark = vi.spyOn(PaymentsRepository.prototype, 'markSucceeded').mockImplementation(async function (this: PaymentsRepository, id, postingId) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      return markSucceeded.call(this, id, postingId);
    });
    try {
      const agent = request.agent(quickPayApp);
      const page = await agent.get(signedCheckout(700, 'ORDER-SHUTDOWN'));
      const res = await agent.post(`/pay/${checkout.code}`).type('form').send({ token: tokenIn(page.text), method: 'mobile_money', phone: '+2250700000009' });
      expect(res.status, res.text).toBe(303);
      await vi.waitFor(() => expect(settle).toHaveBeenCalledTimes(1), { timeout: 5_000, interval: 5 });
      expect(finished).toBe(0);
      await quickPayments.stop();
      expect(finished).toBe(1);
      expect((await testKnex()('payments').where({ reference: 'ORDER-SHUTDOWN' }).first()).status).toBe('succeeded');

      // Stopped: a new delayed payment gets no timer (the next start's sweep settles it).
      const later = request.agent(quickPayApp);
      const next = await later.get(signedCheckout(700, 'ORDER-AFTER-STOP'));
      expect((await later.post(`/pay/${checkout.code}`).type('form').send({ token: tokenIn(next.text), method: 'mobile_money', phone: '+2250700000009' })).status).toBe(303);
      // Longer than the 500 ms settlement delay: a timer scheduled after stop() would have fired by now.
      await new Promise((resolve) => setTimeout(resolve, 800));
      expect(settle).toHaveBeenCalledTimes(1);
      expect((await testKnex()('payments').where({ reference: 'ORDER-AFTER-STOP' }).first()).status).toBe('pending');
    } finally {
      slowMark.mockRestore();
      await quickPayments.stop();
      await app.services.payments.sweepDue({ now: new Date(Date.now() + 60_000) });
    }
  });

  it('is open to the financial roles only', async () => {
    for (const role of ['owner', 'admin', 'representative', 'director', 'finance_manager'] as const) {
      const token = await accessTokenFor(app, await createMember(org, role));
      expect((await request(app).get(`${base(org.id)}/payments`).set(bearer(token))).status, role).toBe(200);
    }
    const cashier = await accessTokenFor(app, await createMember(org, 'cashier'));
    expect((await request(app).get(`${base(org.id)}/payments`).set(bearer(cashier))).status).toBe(403);
    expect((await request(app).get(`${base(org.id)}/payments`)).status).toBe(401);
  });
});

// A customer who pays `?amount=1&reference=ORDER-9001` anonymously on a Checkout must not make
// the merchant's signed link for ORDER-9001 answer 409 "Order already paid", nor the API list
// ORDER-9001 as succeeded for 1 XOF: an unsigned reference is only the customer's note.
describe('an unsigned reference never blocks nor satisfies a signed one', () => {
  it('a squatter pays 1 XOF for ORDER-9001 unsigned: the merchant’s signed link for 25,000 XOF still pays, and only it is ORDER-9001', async () => {
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const own = (await request(app).post(`${base(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: account.id })).body.data;
    const order = `ORDER-9001-${Date.now()}`;

    // The squatter: an unsigned URL with the merchant's order reference, paid with the test card.
    const squat = await openPage(`/pay/${own.code}?amount=1&reference=${order}`);
    const squatRes = await squat.agent
      .post(`/pay/${own.code}`)
      .type('form')
      .send({ token: squat.token, method: 'card', card_number: '4242 4242 4242 4242', card_expiry: '12/30', card_cvc: '123' });
    expect(squatRes.status, squatRes.text).toBe(303);
    const squatReceipt = await squat.agent.get(squatRes.headers.location as string);
    expect(squatReceipt.text).toContain('Payment confirmed');

    // The merchant's customer: the signed link for the order.
    const signed = await request(app).post(`${base(org.id)}/payment-links/${own.id}/signed-links`).set(bearer(owner)).send({ amount: 25000, reference: order });
    expect(signed.status, JSON.stringify(signed.body)).toBe(200);
    const signedUrl = new URL(signed.body.data.url);
    const customer = await openPage(`${signedUrl.pathname}${signedUrl.search}`);
    const paid = await customer.agent.post(`/pay/${own.code}`).type('form').send({ token: customer.token, method: 'mobile_money', phone: '+2250712345678' });
    expect(paid.status, paid.text).toBe(303);
    expect((await customer.agent.get(paid.headers.location as string)).text).toContain('Payment confirmed');

    // The API: the order's reference matches the signed payment only, for the signed amount;
    // the squatter's payment keeps what it typed as a customer note.
    const byReference = await request(app).get(`${base(org.id)}/payments?reference=${order}`).set(bearer(owner));
    expect(byReference.status).toBe(200);
    expect(byReference.body.data.data).toEqual([expect.objectContaining({ reference: order, customer_reference: null, amount_minor: '25000', status: 'succeeded' })]);
    const all = await request(app).get(`${base(org.id)}/payments?link_id=${own.id}`).set(bearer(owner));
    expect(all.body.data.data).toHaveLength(2);
    expect(all.body.data.data).toContainEqual(expect.objectContaining({ reference: null, customer_reference: order, amount_minor: '1', status: 'succeeded' }));

    // The signed order is now reserved: its link cannot be paid twice, while unsigned notes
    // with the same text still pay (they reserve nothing and satisfy nothing).
    const again = await openPage(`${signedUrl.pathname}${signedUrl.search}`);
    const twice = await again.agent.post(`/pay/${own.code}`).type('form').send({ token: again.token, method: 'mobile_money', phone: '+2250712345678' });
    expect(twice.status).toBe(409);
    expect(twice.text).toContain('already been paid');
    const note = await openPage(`/pay/${own.code}?amount=2&reference=${order}`);
    expect((await note.agent.post(`/pay/${own.code}`).type('form').send({ token: note.token, method: 'mobile_money', phone: '+2250712345678' })).status).toBe(303);
    expect(await testKnex()('payments').where({ link_id: own.id, reference: order })).toHaveLength(1);
  });

  it('a payment link’s own reference (fixed by the merchant) is the payment’s reference and reserves the order', async () => {
    const link = await createLink({ destination_account_id: xof.id, amount: 400, reference: `INV-OWN-${Date.now()}` });
    const { agent, token } = await openPage(`/pay/${link.code}`);
    expect((await agent.post(`/pay/${link.code}`).type('form').send({ token, method: 'mobile_money', phone: '+2250712345678' })).status).toBe(303);
    const [payment] = await testKnex()('payments').where({ link_id: link.id });
    expect(payment).toMatchObject({ reference: expect.stringMatching(/^INV-OWN-/), customer_reference: null });
  });
});
