import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { browserJourneyRuns, CHROMIUM } from '../support/browser';

/**
 * The reference page in a real browser (Debian's chromium through playwright-core): /api/docs
 * renders the contract offline, with every operation's code samples (curl and the TypeScript
 * client) beside it and each tag's link to its guide on the same instance. Only requests to the app itself are allowed: a page that needs a CDN fails.
 */
const ARTIFACTS = path.join(__dirname, '..', '..', 'test-artifacts');

let server: http.Server;
let baseUrl: string;
let app: App;
let browser: Browser | undefined;

describe.runIf(browserJourneyRuns())('the API reference page in a real browser', () => {
  beforeAll(async () => {
    app = await buildTestApp();
    server = http.createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('shows an operation with its curl and TypeScript samples and its tag\'s guide link, from the app alone, without a console error', async () => {
    expect(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium chromium-driver`).toBe(true);
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    const page = await context.newPage();
    const problems: string[] = [];
    const elsewhere: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(baseUrl) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
      elsewhere.push(url);
      return route.abort();
    });

    // The trailing-slash address redirects to the page.
    const opened = await page.goto(`${baseUrl}/api/docs/`);
    expect(opened?.url()).toBe(`${baseUrl}/api/docs`);
    expect(opened?.status()).toBe(200);

    // Deep link to one operation; Redoc renders its samples in the right-hand panel.
    await page.goto(`${baseUrl}/api/docs#tag/Escrows/operation/fundEscrow`);
    const operation = page.locator('[data-section-id="tag/Escrows/operation/fundEscrow"]');
    await operation.waitFor({ state: 'visible', timeout: 60_000 });
    const tabs = operation.getByRole('tab');
    await expect.poll(async () => tabs.allInnerTexts(), { timeout: 30_000 }).toEqual(expect.arrayContaining(['curl', 'TypeScript client', 'Payload']));
    // The samples come first: curl is the request panel's selected tab.
    expect((await tabs.allInnerTexts()).slice(0, 3)).toEqual(['curl', 'TypeScript client', 'Payload']);
    await operation.getByRole('tab', { name: 'curl' }).click();
    const curl = await operation.getByRole('tabpanel').filter({ hasText: '/escrows/$ESCROW_ID/fund' }).first().innerText();
    expect(curl).toContain('curl -sS -X POST "$API/escrows/$ESCROW_ID/fund"');
    expect(curl).toContain('Idempotency-Key');
    await operation.getByRole('tab', { name: 'TypeScript client' }).click();
    const typescript = await operation.getByRole('tabpanel').filter({ hasText: 'createPlatformClient' }).first().innerText();
    expect(typescript).toContain("client.POST('/escrows/{escrowId}/fund'");
    await page.screenshot({ path: path.join(ARTIFACTS, 'api-docs.png') });

    // The Escrows tag links to its guide, served by this instance (the contract names `make run`'s address).
    const guide = page.locator(`a[href="${baseUrl}/api/docs/guides/escrows.md"]`);
    await guide.first().waitFor({ state: 'attached', timeout: 30_000 });
    const served = await page.request.get(`${baseUrl}/api/docs/guides/escrows.md`);
    expect(served.status()).toBe(200);
    expect(await served.text()).toBe(fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'integrators', 'escrows.md'), 'utf8'));

    expect(elsewhere, 'the page loads nothing from outside the app').toEqual([]);
    expect(problems, 'console errors').toEqual([]);
  }, 240_000);
});
