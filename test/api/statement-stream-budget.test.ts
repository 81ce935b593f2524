import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import knexFactory from 'knex';
import pino from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryRateLimitBackend } from '../../src/http/rate-limit';
import { buildTestApp, testConfig, composeTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, createMember, createOrgAccount, createOrganization, type TestOrgAccount, type TestOrganization } from '../support/factories';
import { bulkCredit } from '../support/org-account-postings';
import { statementUrl } from '../support/statements';

/**
 * Slow clients against the database pool, with real sockets: a client that sends its request
 * and then stops reading leaves the server's writes blocked on a full socket. Such downloads
 * must not hold database connections, and their number is bounded per user and in total.
 */
// About 330 bytes a CSV row: 20,000 rows (6.6 MB) outgrow what the loopback socket buffers
// hold (about 4 MB here), so a client that stops reading really blocks the server's writes.
const ENTRIES = 20_000;
const DESCRIPTION = `Supplier settlement ${'x'.repeat(170)}`;
const START = new Date('2025-01-01T00:00:00Z');
const END = new Date(START.getTime() + ENTRIES * 100);

let app: App;
let server: http.Server;
let port: number;
let org: TestOrganization;
let account: TestOrgAccount;
const stalled: net.Socket[] = [];

beforeAll(async () => {
  app = await buildTestApp({ env: { STATEMENT_STREAMS_PER_USER: '2', STATEMENT_STREAMS_TOTAL: '3', STATEMENT_STREAM_STALL_TIMEOUT_MS: '60000' } });
  server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  org = await createOrganization();
  account = await createOrgAccount(org, { currency: 'XOF' });
  await bulkCredit(account, ENTRIES, { start: START, stepMs: 100, amountMinor: 7n, chunk: 2000, description: DESCRIPTION });
}, 300_000);

afterAll(async () => {
  for (const socket of stalled) socket.destroy();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

interface StalledDownload {
  status: number;
  head: string;
  socket: net.Socket;
}

/**
 * Sends the CSV request on a raw socket and stops reading as soon as the first bytes arrive
 * (the socket is paused: the kernel buffers fill and the server's writes block).
 */
function stallDownload(token: string): Promise<StalledDownload> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    stalled.push(socket);
    socket.once('error', reject);
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      const head = chunk.toString('latin1');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), head, socket });
    });
    const path = statementUrl(org.id, account.id, { from: START, to: END, format: 'csv' });
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('statement downloads that stop reading', () => {
  it('hold no database connection, are bounded per user (429) and in total (503), and free their slot when they end', { timeout: 180_000 }, async () => {
    const [alice, bob, carol] = await Promise.all([createMember(org, 'representative'), createMember(org, 'finance_manager'), createMember(org, 'owner')]);
    const [aliceToken, bobToken, carolToken] = await Promise.all([accessTokenFor(app, alice), accessTokenFor(app, bob), accessTokenFor(app, carol)]);

    const first = await stallDownload(aliceToken);
    const second = await stallDownload(aliceToken);
    expect([first.status, second.status]).toEqual([200, 200]);

    const third = await request(app).get(statementUrl(org.id, account.id, { from: START, to: END, format: 'csv' })).set(bearer(aliceToken));
    expect(third.status).toBe(429);
    expect(third.body).toMatchObject({ success: false, error: 'TooManyStreams' });
    expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);

    const bobs = await stallDownload(bobToken);
    expect(bobs.status).toBe(200);
    const carols = await request(app).get(statementUrl(org.id, account.id, { from: START, to: END, format: 'csv' })).set(bearer(carolToken));
    expect(carols.status).toBe(503);
    expect(carols.body).toMatchObject({ success: false, error: 'ServiceUnavailable' });
    expect(Number(carols.headers['retry-after'])).toBeGreaterThan(0);

    // Three downloads are stuck on full sockets, yet none holds a connection of the pool
    // (on the embedded back-end the pool has one: a held one would block everything below).
    // (They fill the socket buffers first, reading batch after batch, then block.)
    const pool = testKnex().client.pool as { numUsed(): number };
    const deadline = Date.now() + 20_000;
    while (pool.numUsed() > 0 && Date.now() < deadline) await sleep(50);
    expect(pool.numUsed()).toBe(0);
    // And it stays so while they remain stuck: no download takes a connection back meanwhile.
    await sleep(500);
    expect(pool.numUsed()).toBe(0);
    const started = Date.now();
    const others = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        i % 2 === 0
          ? request(app).get(`/api/business/organizations/${org.id}/accounts`).set(bearer(carolToken))
          : request(app).get(statementUrl(org.id, account.id, { from: START, to: END, limit: 20 })).set(bearer(bobToken)),
      ),
    );
    expect(others.map((res) => res.status)).toEqual(Array(12).fill(200));
    expect(Date.now() - started).toBeLessThan(8_000);

    // The stalled clients go away: their slots are released and a full download succeeds.
    for (const download of [first, second, bobs]) download.socket.destroy();
    let complete: request.Response | undefined;
    for (let attempt = 0; attempt < 50; attempt += 1) {
      complete = await request(app).get(statementUrl(org.id, account.id, { from: START, to: END, format: 'csv' })).set(bearer(aliceToken));
      if (complete.status === 200) break;
      await sleep(100);
    }
    expect(complete?.status).toBe(200);
    const rows = (complete?.text ?? '').trimEnd().split('\r\n');
    expect(rows).toHaveLength(ENTRIES + 3);
    expect(rows[rows.length - 1]).toContain(String(7 * ENTRIES));
  });
});

describe('no database connection free in time', () => {
  it('answers 503 ServiceUnavailable with Retry-After, never 500', async () => {
    // A "database" that accepts connections and never answers: every acquire times out.
    const silent = net.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const held: net.Socket[] = [];
    silent.on('connection', (socket) => held.push(socket));
    const deadKnex = knexFactory({
      client: 'pg',
      connection: { host: '127.0.0.1', port: (silent.address() as AddressInfo).port, user: 'nobody', database: 'nothing' },
      pool: { min: 0, max: 1 },
      acquireConnectionTimeout: 300,
    });
    try {
      const config = testConfig();
      const starved = composeTestApp({ config, knex: deadKnex, logger: pino({ level: 'silent' }), rateLimitBackend: memoryRateLimitBackend() });
      const token = starved.services.tokens.signAccessToken({ sub: crypto.randomUUID(), sid: crypto.randomUUID(), adm: false });
      const res = await request(starved).get('/api/me').set(bearer(token));
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ success: false, error: 'ServiceUnavailable' });
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      for (const socket of held) socket.destroy();
      await Promise.race([deadKnex.destroy(), sleep(2_000)]);
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});

describe('statement downloads that read slowly', () => {
  it('are cut at the overall time limit however they read, so two slow readers cannot keep every export at 503', { timeout: 120_000 }, async () => {
    const limited = await buildTestApp({
      env: { STATEMENT_STREAMS_PER_USER: '1', STATEMENT_STREAMS_TOTAL: '2', STATEMENT_STREAM_STALL_TIMEOUT_MS: '60000', STATEMENT_STREAM_MAX_DURATION_MS: '3000' },
    });
    const slowServer = http.createServer(limited);
    await new Promise<void>((resolve) => slowServer.listen(0, '127.0.0.1', resolve));
    const slowPort = (slowServer.address() as AddressInfo).port;
    const sockets: net.Socket[] = [];
    try {
      const [alice, bob, carol] = await Promise.all([createMember(org, 'representative'), createMember(org, 'finance_manager'), createMember(org, 'owner')]);
      const [aliceToken, bobToken, carolToken] = await Promise.all([accessTokenFor(limited, alice), accessTokenFor(limited, bob), accessTokenFor(limited, carol)]);

      /** Reads one chunk every 400 ms (about 160 KB/s: the 6.6 MB file would take 40 s): never stalled long enough for the stall timer. */
      const trickle = (token: string) =>
        new Promise<{ status: number; received: () => string; closed: Promise<void>; drain: () => void }>((resolve, reject) => {
          const socket = net.connect(slowPort, '127.0.0.1');
          sockets.push(socket);
          let text = '';
          const closed = new Promise<void>((done) => socket.once('close', () => done()));
          let trickling = true;
          const timer = setInterval(() => socket.resume(), 400);
          const drain = () => {
            trickling = false;
            clearInterval(timer);
            socket.resume();
          };
          socket.once('close', () => clearInterval(timer));
          socket.once('error', reject);
          socket.on('data', (chunk: Buffer) => {
            const first = text === '';
            text += chunk.toString('latin1');
            if (trickling) socket.pause();
            if (first) resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), received: () => text, closed, drain });
          });
          const path = statementUrl(org.id, account.id, { from: START, to: END, format: 'csv' });
          socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`);
        });
      const slow = [await trickle(aliceToken), await trickle(bobToken)];
      expect(slow.map((download) => download.status)).toEqual([200, 200]);
      const short = statementUrl(org.id, account.id, { from: START, to: new Date(START.getTime() + 50 * 100), format: 'csv' });
      const refused = await request(limited).get(short).set(bearer(carolToken));
      expect(refused.status).toBe(503);

      // Past the overall limit (3 s) both are cut and their slots are free, long before they
      // could have finished reading; what they got is a truncated file (no closing balance row).
      const started = Date.now();
      while (limited.services.accounts.streams.inUse > 0 && Date.now() - started < 12_000) await sleep(100);
      expect(limited.services.accounts.streams.inUse).toBe(0);
      for (const download of slow) download.drain();
      await Promise.all(slow.map((download) => download.closed));
      for (const download of slow) {
        expect(download.received().length).toBeGreaterThan(100_000);
        expect(download.received()).not.toContain('"closing_balance"');
      }
      let served: request.Response | undefined;
      for (let attempt = 0; attempt < 50; attempt += 1) {
        served = await request(limited).get(short).set(bearer(carolToken));
        if (served.status === 200) break;
        await sleep(100);
      }
      expect(served?.status).toBe(200);
      const rows = (served?.text ?? '').trimEnd().split('\r\n');
      expect(rows).toHaveLength(50 + 3);
      expect(rows[rows.length - 1]).toContain('"closing_balance"');
      expect(limited.services.accounts.streams.inUse).toBe(0);
    } finally {
      for (const socket of sockets) socket.destroy();
      slowServer.closeAllConnections();
      await new Promise<void>((resolve) => slowServer.close(() => resolve()));
    }
  });
});
