import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import pino from 'pino';
import { chromium, type Browser } from 'playwright-core';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPayApp } from '../../src/pay/pay-app';
import { buildTestApp, testConfig, type App } from '../support/app';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, createMember, createOrgAccount, createOrganization } from '../support/factories';
import { balanceOf, expectLedgerInvariants } from '../support/ledger-invariants';
import { browserJourneyRuns, CHROMIUM } from '../support/browser';

/**
 * The whole customer journey in a real browser: Debian's chromium (never a downloaded one)
 * driven by playwright-core. Without /usr/bin/chromium the journey is skipped and `make test`
 * says so at the end; with REQUIRE_BROWSER_TESTS=1 (CI) it runs and fails instead. Install
 * the Debian packages `chromium` and `chromium-driver` (.ci/run does it when they are missing).
 */
const ARTIFACTS = path.join(__dirname, '..', '..', 'test-artifacts');

let server: http.Server;
let payUrl: string;
let app: App;
let browser: Browser | undefined;

describe.runIf(browserJourneyRuns())('Checkout in a real browser', () => {
  beforeAll(async () => {
    server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    payUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // The API and the payment page share the services, as in src/main.ts; PAY_URL is the real address.
    app = await buildTestApp({ env: { PAY_URL: payUrl } });
    server.on('request', createPayApp({ config: testConfig({ PAY_URL: payUrl }), logger: pino({ level: 'silent' }), paymentPage: app.services.paymentPage, rateLimitBackend: app.rateLimitBackend }));
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('an owner creates the Checkout, a customer pays its link_with_amount with sandbox mobile money, the integrator sees it succeeded', async () => {
    expect(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium chromium-driver`).toBe(true);
    fs.mkdirSync(ARTIFACTS, { recursive: true });

    const org = await createOrganization({ name: 'Boutique Awa & Fils' });
    const owner = await accessTokenFor(app, await createMember(org, 'owner'));
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const created = await request(app)
      .post(`/api/business/organizations/${org.id}/checkout`)
      .set(bearer(owner))
      .send({ destination_account_id: account.id });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const checkout = created.body.data as { id: string; public_url: string };
    expect(checkout.public_url.startsWith(`${payUrl}/pay/`)).toBe(true);
    const reference = `ORDER-${Date.now()}`;
    // The order's URL, signed by the merchant (only a signed reference is the
    // payment's order reference; an unsigned one is the customer's note).
    const signed = await request(app)
      .post(`/api/business/organizations/${org.id}/payment-links/${checkout.id}/signed-links`)
      .set(bearer(owner))
      .send({ amount: 15000, reference });
    expect(signed.status, JSON.stringify(signed.body)).toBe(200);
    const url = signed.body.data.url as string;
    expect(url.startsWith(`${checkout.public_url}?amount=15000&reference=${encodeURIComponent(reference)}&`)).toBe(true);
    const before = await balanceOf(testKnex(), account.ledgerAccountId);

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (message) => {
      // The 409 of paying the order again is expected; anything else (a CSP violation...) is not.
      if (message.type() === 'error' && !/status of 409/.test(message.text())) problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));

    const opened = await page.goto(url);
    expect(opened?.status()).toBe(200);
    await expect.poll(() => page.title()).toBe('Pay Boutique Awa & Fils');
    expect(await page.textContent('#amount')).toBe('15\u202f000 XOF');
    expect(await page.textContent('#reference')).toBe(reference);
    // The stylesheet loaded under the strict CSP (no violation reported, styles applied).
    expect(await page.$eval('button#pay-mobile-money', (el) => (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(el).backgroundColor)).toBe('rgb(11, 92, 213)');
    await page.screenshot({ path: path.join(ARTIFACTS, 'checkout-form.png'), fullPage: true });

    await page.fill('#phone', '+225 07 12 34 56 78');
    await Promise.all([page.waitForURL(/\/payments\/[0-9a-f-]{36}\?t=/), page.click('#pay-mobile-money')]);
    await page.waitForSelector('#status[data-status="succeeded"]');
    expect(await page.textContent('h1')).toBe('Payment confirmed');
    expect(await page.textContent('#paid-amount')).toBe('15\u202f000 XOF');
    expect(await page.textContent('#paid-reference')).toBe(reference);
    expect(await page.textContent('.notice')).toContain('is not a confirmation of payment');
    await page.screenshot({ path: path.join(ARTIFACTS, 'checkout-confirmation.png'), fullPage: true });
    const paymentId = (await page.textContent('#payment-id'))?.trim();

    // Going back to the form of an order already paid shows the form (showing a page never
    // probes the order's payments), but paying it again is refused.
    const back = await page.goBack();
    expect(back?.status()).toBe(200);
    await page.fill('#phone', '+225 07 12 34 56 78');
    const [again] = await Promise.all([page.waitForNavigation(), page.click('#pay-mobile-money')]);
    expect(again?.status()).toBe(409);
    expect(await page.textContent('h1')).toBe('Order already paid');
    expect(problems).toEqual([]);

    // The integrator checks the payment through the API before fulfilling the order.
    const status = await request(app).get(`/api/business/organizations/${org.id}/payments?reference=${encodeURIComponent(reference)}`).set(bearer(owner));
    expect(status.status).toBe(200);
    expect(status.body.data.data).toHaveLength(1);
    expect(status.body.data.data[0]).toMatchObject({
      id: paymentId,
      link_id: checkout.id,
      status: 'succeeded',
      amount: 15000,
      amount_minor: '15000',
      currency: 'XOF',
      reference,
      method: 'mobile_money',
    });
    const one = await request(app).get(`/api/business/organizations/${org.id}/payments/${paymentId}`).set(bearer(owner));
    expect(one.body.data.status).toBe('succeeded');
    expect(await balanceOf(testKnex(), account.ledgerAccountId)).toBe(before + 15_000n);
    await expectLedgerInvariants(testKnex());
  });
});
