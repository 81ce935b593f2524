import crypto from 'node:crypto';
import net from 'node:net';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openReadStandby, type ReadStandby } from '../../src/db/read-standby';
import type { RecentWritesRedis } from '../../src/db/read-routing';
import { buildTestApp, testRedis, type App } from '../support/app';
import { createOwnDatabase, databaseKind } from '../support/database';
import { bearer, businessPath, createCaller, createOrganization, createOrgAccount, memberToken, type TestCaller } from '../support/factories';
import { statementUrl } from '../support/statements';
import { until } from '../support/jobs';

async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', () => done()));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

/**
 * Long enough that a lag check on a loaded CI machine answers within its timeout (the interval,
 * at least 1 s) and the routing never sees the last check as stale (three intervals): each test
 * then reads the state of the check that `appOn` waited for.
 */
const LAG_CHECK_INTERVAL_MS = 10_000;

/**
 * The "standby" is a second migrated database on the same server, holding none of the
 * primary's users: a list read it answers is empty where the primary's is not, so each
 * answer tells which server gave it. (It is not in recovery, so its lag is 0.)
 */
describe.runIf(databaseKind() === 'postgres')('list reads on a standby (DATABASE_READ_URL, real PostgreSQL)', () => {
  let standbyDatabase: Awaited<ReturnType<typeof createOwnDatabase>>;
  const opened: ReadStandby[] = [];

  async function standby(url: string, options: { afterWriteSeconds?: number; shared?: boolean } = {}): Promise<ReadStandby> {
    const redis = options.shared ? await testRedis() : undefined;
    const shared: RecentWritesRedis | undefined = redis && { set: (key, value, mode, ms) => redis.set(key, value, mode, ms), exists: (...keys) => redis.exists(...keys) };
    const opened_ = openReadStandby({ settings: { url, afterWriteSeconds: options.afterWriteSeconds ?? 30, maxLagMs: 1_000, lagCheckIntervalMs: LAG_CHECK_INTERVAL_MS }, redis: shared, poolMax: 2 });
    opened.push(opened_);
    return opened_;
  }

  async function appOn(reads: ReadStandby): Promise<App> {
    await until(() => reads.monitor.current !== undefined);
    return buildTestApp({ reads: reads.routing });
  }

  const walletCount = async (app: App, caller: TestCaller): Promise<number> => {
    const res = await request(app).get('/api/wallets').set(caller.auth);
    expect(res.status).toBe(200);
    return (res.body as { data: { data: unknown[] } }).data.data.length;
  };

  const transfer = (app: App, from: TestCaller, to: TestCaller) =>
    request(app).post('/api/transfers').set(from.auth).set('Idempotency-Key', crypto.randomUUID()).send({ amount: 100, currency: 'XOF', recipientIdentifier: to.user.email });

  beforeAll(async () => {
    standbyDatabase = await createOwnDatabase('read_standby');
  });

  afterAll(async () => {
    for (const each of opened) await each.close();
    await standbyDatabase?.drop();
  });

  it('answers a list read from the standby when the caller has not written, and from the primary without a read URL', async () => {
    const reads = await standby(standbyDatabase.url);
    const app = await appOn(reads);
    const plain = await buildTestApp();
    const alice = await createCaller(app, { XOF: 10_000n });
    expect(reads.monitor.current).toMatchObject({ reachable: true, lagMs: 0 });
    expect(await walletCount(app, alice)).toBe(0);
    expect(await walletCount(plain, alice)).toBe(1);
  });

  it('answers the list reads of a caller that just wrote from the primary; others still read the standby', async () => {
    const reads = await standby(standbyDatabase.url);
    const app = await appOn(reads);
    const alice = await createCaller(app, { XOF: 10_000n });
    const bob = await createCaller(app, { XOF: 10_000n });
    expect(await walletCount(app, alice)).toBe(0);
    expect((await transfer(app, alice, bob)).status).toBe(200);
    expect(await walletCount(app, alice)).toBe(1);
    expect(await walletCount(app, bob)).toBe(0);
  });

  it('sends the writer back to the standby once the read-after-write window has passed', async () => {
    const reads = await standby(standbyDatabase.url, { afterWriteSeconds: 1 });
    const app = await appOn(reads);
    const alice = await createCaller(app, { XOF: 10_000n });
    const bob = await createCaller(app, { XOF: 10_000n });
    const wrote = Date.now();
    expect((await transfer(app, alice, bob)).status).toBe(200);
    await until(async () => (await walletCount(app, alice)) === 0, 10_000);
    expect(Date.now() - wrote).toBeGreaterThanOrEqual(1_000);
  });

  it("answers an organisation's account list and statement from the standby until one of its members writes", async () => {
    const reads = await standby(standbyDatabase.url);
    const app = await appOn(reads);
    const org = await createOrganization();
    const account = await createOrgAccount(org);
    const auth = bearer(await memberToken(app, org, 'owner'));
    const accounts = async () => ((await request(app).get(`${businessPath(org.id)}/accounts`).set(auth)).body as { data: { data: unknown[] } }).data.data.length;
    // The standby holds no such organisation's account: an empty list, and the statement's 404.
    expect(await accounts()).toBe(0);
    expect((await request(app).get(statementUrl(org.id, account.id, {})).set(auth)).status).toBe(404);
    const link = await request(app).post(`${businessPath(org.id)}/payment-links`).set(auth).set('Idempotency-Key', crypto.randomUUID()).send({ destination_account_id: account.id });
    expect(link.status).toBeLessThan(300);
    expect(await accounts()).toBe(1);
    expect((await request(app).get(statementUrl(org.id, account.id, {})).set(auth)).status).toBe(200);
  });

  it.runIf(process.env.REDIS_URL)('remembers a write in Redis, so another instance answers the writer from the primary', async () => {
    const first = await appOn(await standby(standbyDatabase.url, { shared: true }));
    const second = await appOn(await standby(standbyDatabase.url, { shared: true }));
    const alice = await createCaller(first, { XOF: 10_000n });
    const bob = await createCaller(first, { XOF: 10_000n });
    expect(await walletCount(second, alice)).toBe(0);
    expect((await transfer(first, alice, bob)).status).toBe(200);
    expect(await walletCount(second, alice)).toBe(1);
  });

  it('answers list reads from the primary while the standby is unreachable', async () => {
    const url = new URL(standbyDatabase.url);
    url.hostname = '127.0.0.1';
    url.port = String(await closedPort());
    const reads = await standby(url.toString());
    const app = await appOn(reads);
    const alice = await createCaller(app, { XOF: 10_000n });
    expect(reads.monitor.current).toMatchObject({ reachable: false });
    expect(await walletCount(app, alice)).toBe(1);
  });
});
