// `make drill`: three API instances behind nginx on loopback, sharing one PostgreSQL database
// and one Redis; a bounded workload (transfers, payment-page payments, escrow lifecycles,
// tontine contributions, invoices) through nginx while faults strike: kill -9 of one instance
// (restarted), pg_terminate_backend of every backend of the database, a Redis restart. The demo
// organisation's webhook endpoint points at a receiver the drill runs (DRILL_HOOK_PORT, 18780),
// which refuses the first attempt of one event in five (503) so retries happen too. Then the
// invariants of scripts/drill/checks.ts are checked and printed; any violation exits 1.
//
// Before the real verdict the drill proves its checks can fail: it writes a one-sided ledger
// entry, expects the ledger check to report it, and removes it. DRILL_INJECT=ledger leaves that
// entry in place instead, so the drill must fail (docs/operators/fault-drill.md shows such a run).
//
// Needs: PostgreSQL (DRILL_PG_URL, default postgres://postgres@127.0.0.1:5432/postgres, a
// superuser: it creates and drops its own database), redis-server and nginx binaries
// (scripts/drill/run.sh installs Debian's nginx when absent). Its own Redis runs on
// DRILL_REDIS_PORT (16390), nginx on DRILL_PORT (18790, payment page DRILL_PORT + 1), the
// instances on 18700, 18710, 18720 (+1 for their payment pages). Bounded: DRILL_TIMEOUT_S (300).
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import http from 'node:http';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { Webhook } from 'standardwebhooks';
import { CHECKS, injectBadLedgerRow, runChecks, type Reception, type WebhookContext } from './checks';
import { call, configureWorkload, DRILL_RATE_LIMITS, escrows, JOURNAL, journal, login, operation, setup, state, stats, token, transfers, userIds, USERS } from './workload';

const ROOT = resolve(__dirname, '../..');
const env = process.env;
const PG_URL = env.DRILL_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_PORT = Number(env.DRILL_REDIS_PORT ?? 16390);
const NGINX_PORT = Number(env.DRILL_PORT ?? 18790);
const HOOK_PORT = Number(env.DRILL_HOOK_PORT ?? 18780);
const INSTANCE_PORTS = [18700, 18710, 18720];
const TIMEOUT_S = Number(env.DRILL_TIMEOUT_S ?? 300);
const NGINX = env.DRILL_NGINX ?? '/usr/sbin/nginx';
const SCALE = Number(env.DRILL_SCALE ?? 1);
const API = `http://127.0.0.1:${NGINX_PORT}/api`;
const PAGE = `http://127.0.0.1:${NGINX_PORT + 1}`;
const started = Date.now();
const work = mkdtempSync(join(tmpdir(), 'drill-'));
const dbName = `drill_${Date.now()}_${crypto.randomBytes(3).toString('hex')}`;
const dbUrl = (() => {
  const url = new URL(PG_URL);
  url.pathname = `/${dbName}`;
  return url.toString();
})();

const log = (message: string): void => console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${message}`);
const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

// ---------------------------------------------------------------- processes
const children = new Set<ChildProcess>();
function startProcess(name: string, command: string, args: string[], extraEnv: Record<string, string> = {}): ChildProcess {
  const out = openSync(join(work, `${name}.log`), 'a');
  const child = spawn(command, args, { cwd: ROOT, env: { ...env, ...extraEnv }, stdio: ['ignore', out, out] });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

function instanceEnv(index: number): Record<string, string> {
  const port = INSTANCE_PORTS[index] as number;
  return {
    NODE_ENV: 'development',
    DATABASE_URL: dbUrl,
    REDIS_URL: `redis://127.0.0.1:${REDIS_PORT}`,
    PORT: String(port),
    PAY_PORT: String(port + 1),
    PAY_URL: PAGE,
    METRICS_PORT: '0',
    TRUST_PROXY_HOPS: '1',
    LOG_FORMAT: 'json',
    LOG_LEVEL: 'warn',
    ...DRILL_RATE_LIMITS,
  };
}

const instances: Array<ChildProcess | undefined> = [];
/** Instances that exited on their own (not the drill's kill -9, not its teardown). */
const unexpectedExits: string[] = [];
let tearingDown = false;
function startInstance(index: number): void {
  const child = startProcess(`instance-${index}`, process.execPath, ['--import', 'tsx', 'src/main.ts'], instanceEnv(index));
  instances[index] = child;
  child.on('exit', (code, signal) => {
    if (tearingDown || signal === 'SIGKILL') return;
    // Its last error line says why (the work directory is gone after the drill).
    let why = '';
    try {
      const lines = readFileSync(join(work, `instance-${index}.log`), 'utf8').trim().split('\n');
      why = (lines.filter((line) => /"level":(50|60)|Error|Failed/.test(line)).pop() ?? lines.pop() ?? '').slice(0, 400);
    } catch {
      /* no log */
    }
    unexpectedExits.push(`instance ${index} (pid ${child.pid}) exited by itself: code ${code}, signal ${signal}; last error: ${why}`);
  });
}

let redis: ChildProcess | undefined;
function startRedis(): void {
  redis = startProcess('redis', 'redis-server', ['--port', String(REDIS_PORT), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']);
}

function startNginx(): ChildProcess {
  const upstream = (offset: number): string => INSTANCE_PORTS.map((p) => `    server 127.0.0.1:${p + offset} max_fails=1 fail_timeout=2s;`).join('\n');
  const conf = `worker_processes 1;
error_log ${work}/nginx-error.log warn;
pid ${work}/nginx.pid;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path ${work}/nginx-body;
  proxy_temp_path ${work}/nginx-proxy;
  fastcgi_temp_path ${work}/nginx-fastcgi;
  uwsgi_temp_path ${work}/nginx-uwsgi;
  scgi_temp_path ${work}/nginx-scgi;
  upstream api {\n${upstream(0)}\n  }
  upstream pay {\n${upstream(1)}\n  }
  # A refused connection moves on to the next instance; a request an instance already took is
  # never sent twice (nginx does not retry a POST once sent: the client retries with its key).
  proxy_next_upstream error timeout;
  proxy_connect_timeout 1s;
  proxy_read_timeout 30s;
  proxy_set_header Host $host;
  proxy_set_header X-Forwarded-For $remote_addr;
  server { listen 127.0.0.1:${NGINX_PORT}; location / { proxy_pass http://api; } }
  server { listen 127.0.0.1:${NGINX_PORT + 1}; location / { proxy_pass http://pay; } }
}
`;
  writeFileSync(join(work, 'nginx.conf'), conf);
  return startProcess('nginx', NGINX, ['-p', work, '-c', join(work, 'nginx.conf'), '-g', 'daemon off;']);
}

async function waitFor(what: string, probe: () => Promise<boolean>, seconds: number): Promise<void> {
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until) {
    if (await probe().catch(() => false)) return;
    await sleep(250);
  }
  throw new Error(`${what} not ready within ${seconds} s`);
}

const healthy = (port: number) => async (): Promise<boolean> => (await fetch(`http://127.0.0.1:${port}/api/health`, { signal: AbortSignal.timeout(2000) })).status === 200;

// ---------------------------------------------------------------- the webhook receiver
/**
 * The receiver the demo organisation's endpoint points at: verifies each delivery with the
 * `standardwebhooks` package once the drill knows the secret, counts deliveries per
 * `webhook-id`, and refuses (503) the first attempt of one event in five, so those are retried.
 */
const received = new Map<string, Reception>();
let hookVerifier: Webhook | undefined;
function startReceiver(): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const id = String(req.headers['webhook-id'] ?? '');
      const got = received.get(id) ?? { acknowledged: 0, refused: 0, badSignature: 0 };
      received.set(id, got);
      try {
        hookVerifier?.verify(Buffer.concat(chunks).toString('utf8'), req.headers as Record<string, string>);
      } catch {
        got.badSignature += 1;
      }
      const refuseFirst = crypto.createHash('sha256').update(id).digest()[0]! % 5 === 0;
      if (refuseFirst && got.refused === 0 && got.acknowledged === 0) {
        got.refused += 1;
        res.writeHead(503).end();
        return;
      }
      got.acknowledged += 1;
      res.writeHead(204).end();
    });
  });
  return new Promise((done, fail) => {
    server.once('error', fail);
    server.listen(HOOK_PORT, '127.0.0.1', () => done(server));
  });
}

// ---------------------------------------------------------------- HTTP with retries

async function payments(count: number, code: string): Promise<void> {
  for (let i = 0; i < count; i += 1) {
    const marker = `drill-pay-${crypto.randomUUID().slice(0, 18)}`;
    let answered = false;
    // Opening the page is safe to repeat; the form is sent once (a customer does not resubmit
    // a payment whose answer they lost: the outcome is then unknown, and at most one may exist).
    for (let attempt = 1; attempt <= 10 && !answered; attempt += 1) {
      let cookie: string | undefined;
      let formToken: string | undefined;
      try {
        const page = await fetch(`${PAGE}/pay/${code}?reference=${marker}`, { signal: AbortSignal.timeout(20_000) });
        const html = await page.text();
        cookie = /pay_bid=([^;]+)/.exec(page.headers.get('set-cookie') ?? '')?.[1];
        formToken = /name="token" value="([^"]+)"/.exec(html)?.[1];
        if (page.status !== 200 || !cookie || !formToken) throw new Error(`page ${page.status}`);
      } catch {
        stats.networkErrors += 1;
        await sleep(300);
        continue;
      }
      answered = true;
      stats.requests += 2;
      try {
        const form = new URLSearchParams({ token: formToken, method: 'mobile_money', amount: String(500 + crypto.randomInt(500)), phone: '+2250700000099' });
        const res = await fetch(`${PAGE}/pay/${code}`, { method: 'POST', body: form, headers: { cookie: `pay_bid=${cookie}`, 'content-type': 'application/x-www-form-urlencoded' }, redirect: 'manual', signal: AbortSignal.timeout(20_000) });
        const id = /\/payments\/([0-9a-f-]{36})/.exec(res.headers.get('location') ?? '')?.[1];
        if (res.status === 303 && id) journal({ kind: 'payment', marker, outcome: 'acknowledged', resourceId: id, status: 303, attempts: attempt });
        else if (res.status >= 400 && res.status < 500) journal({ kind: 'payment', marker, outcome: 'refused', status: res.status, attempts: attempt });
        else journal({ kind: 'payment', marker, outcome: 'unknown', status: res.status, attempts: attempt });
      } catch {
        stats.networkErrors += 1;
        journal({ kind: 'payment', marker, outcome: 'unknown', error: 'no answer', attempts: attempt });
      }
    }
    state.progress += 1;
  }
}


/** Invoices of the demo organisation (created, then finalised): events for the webhook receiver. */
async function invoices(orgId: string, count: number): Promise<void> {
  const finance = token('finance@demo.example');
  const base = `/business/organizations/${orgId}`;
  const customer = await setup('customer', () => call('POST', `${base}/customers`, finance, { name: 'Drill customer', email: 'drill@customer.example' }), 201);
  for (let i = 0; i < count; i += 1) {
    const key = crypto.randomUUID();
    const body = { kind: 'invoice', customer_id: customer.body.data?.id, currency: 'XOF', line_items: [{ description: `Drill work ${i}`, quantity: 1, unit_amount: String(1000 + i) }] };
    const created = await setup('invoice', () => call('POST', `${base}/invoices`, finance, body, key), 201).catch(() => undefined);
    const id = created?.body.data?.id;
    if (id) await setup('invoice finalize', () => call('POST', `${base}/invoices/${String(id)}/finalize`, finance), 200).catch(() => undefined);
    state.progress += 1;
  }
}

/**
 * Points the demo organisation's (disabled) webhook endpoint at the drill's receiver, takes a
 * new secret (the old one ends now), then enables it. Answers what the webhook check needs.
 */
async function pointWebhookAtReceiver(db: Knex, orgId: string): Promise<WebhookContext> {
  const owner = token('owner@demo.example');
  const base = `/business/organizations/${orgId}/webhook-endpoints`;
  const list = await setup('webhook endpoints', () => call('GET', base, owner), 200);
  const demo = ((list.body.data?.data ?? []) as Array<{ id: string; url: string }>)[0];
  if (!demo) throw new Error('the demo organisation has no webhook endpoint');
  await setup('webhook url', () => call('PATCH', `${base}/${demo.id}`, owner, { url: `http://127.0.0.1:${HOOK_PORT}/webhooks`, events: ['*'] }), 200);
  const rotated = await setup('webhook secret', () => call('POST', `${base}/${demo.id}/rotate-secret`, owner, { expire_current_in_seconds: 0 }), 200);
  hookVerifier = new Webhook(String(rotated.body.data?.secret));
  const after = (await db.raw(`SELECT coalesce(max(sequence), 0)::text AS n FROM events`)).rows[0].n as string;
  await setup('webhook enable', () => call('PATCH', `${base}/${demo.id}`, owner, { status: 'enabled' }), 200);
  return { endpointId: demo.id, organizationId: orgId, afterSequence: after, received };
}

/** Until the sandbox payments are settled and every delivery to the endpoint succeeded (or `seconds` passed). */
async function drainWebhooks(db: Knex, endpointId: string, seconds: number): Promise<void> {
  const began = Date.now();
  while (Date.now() - began < seconds * 1000) {
    const row = (
      await db.raw(
        `SELECT (SELECT count(*) FROM payments WHERE status = 'pending')::int AS payments,
                (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = ? AND status <> 'succeeded')::int AS deliveries`,
        [endpointId],
      )
    ).rows[0] as { payments: number; deliveries: number };
    if (row.payments === 0 && row.deliveries === 0) {
      log(`webhooks: every delivery succeeded ${((Date.now() - began) / 1000).toFixed(1)} s after the workload (${received.size} events at the receiver)`);
      return;
    }
    await sleep(500);
  }
  log(`webhooks: not drained after ${seconds} s (the check below says what is missing)`);
}

async function tontine(members: string[], cycles: number): Promise<void> {
  const [organizer, ...others] = members as [string, ...string[]];
  const created = await setup('tontine create', () => call('POST', '/tontines', token(organizer), { name: 'Drill circle', currency: 'XOF', contribution_amount: 1000, frequency: 'weekly', max_members: members.length, payout_order: 'join_order' }), 201);
  const id = String(created.body.data?.id);
  for (const member of others) {
    await setup('tontine invitation', () => call('POST', `/tontines/${id}/invitations`, token(organizer), { identifier: member }), 201);
    await setup('tontine join', () => call('POST', `/tontines/${id}/join`, token(member)), 200);
  }
  await setup('tontine start', () => call('POST', `/tontines/${id}/start`, token(organizer)), 200);
  for (let cycle = 1; cycle <= cycles; cycle += 1) {
    await Promise.all(
      members.map(async (member) => {
        const key = crypto.randomUUID();
        const userId = userIds.get(member) as string;
        await operation({ kind: 'tontine_contribution', marker: `${id}:${cycle}:${userId}`, tontine: { id, cycle, userId } }, () =>
          call('POST', `/tontines/${id}/contributions`, token(member), { cycle }, key),
        );
        state.progress += 1;
      }),
    );
  }
}

// ---------------------------------------------------------------- faults
const faults: string[] = [];
async function killAndRestartInstance(): Promise<void> {
  const index = 1;
  log(`fault: kill -9 instance ${index} (pid ${instances[index]?.pid}, port ${INSTANCE_PORTS[index]})`);
  instances[index]?.kill('SIGKILL');
  faults.push(`kill -9 of instance ${index}`);
  await sleep(1500);
  startInstance(index);
  // The restart runs while the workload and the next faults go on; the drill waits for it at the end.
  restarted = waitFor(`instance ${index} after its restart`, healthy(INSTANCE_PORTS[index] as number), 150).then(() => log(`instance ${index} restarted and healthy`));
}
let restarted: Promise<void> = Promise.resolve();

async function terminateBackends(admin: Knex): Promise<void> {
  const rows = (await admin.raw(`SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE datname = ? AND pid <> pg_backend_pid()`, [dbName])).rows as unknown[];
  log(`fault: pg_terminate_backend of every backend of ${dbName}: ${rows.length} terminated`);
  faults.push(`pg_terminate_backend of ${rows.length} backends`);
}

async function restartRedis(): Promise<void> {
  log(`fault: Redis restart (port ${REDIS_PORT})`);
  redis?.kill('SIGKILL');
  await sleep(1000);
  startRedis();
  faults.push('Redis restart');
}

// ---------------------------------------------------------------- main
async function main(): Promise<number> {
  configureWorkload({ apis: [API] });
  const admin = knexFactory({ client: 'pg', connection: PG_URL, pool: { min: 0, max: 2 } });
  let db: Knex | undefined;
  const watchdog = setTimeout(() => {
    console.error(`drill: over its ${TIMEOUT_S} s bound: stopping (FAIL)`);
    teardown(admin).finally(() => process.exit(2));
  }, TIMEOUT_S * 1000);
  let receiver: http.Server | undefined;
  try {
    await admin.raw(`CREATE DATABASE ${dbName}`);
    log(`database ${dbName}; work directory ${work}`);
    receiver = await startReceiver();
    startRedis();
    const migrate = startProcess('migrate', process.execPath, ['--import', 'tsx', 'scripts/migrate.ts'], instanceEnv(0));
    const migrated = await new Promise<number>((done) => migrate.on('exit', (code) => done(code ?? 1)));
    if (migrated !== 0) throw new Error(`migrations failed: ${readFileSync(join(work, 'migrate.log'), 'utf8').slice(-800)}`);
    const instancesFrom = new Date();
    for (const index of INSTANCE_PORTS.keys()) startInstance(index);
    startNginx();
    for (const port of INSTANCE_PORTS) await waitFor(`instance on ${port}`, healthy(port), 180);
    await waitFor('nginx', healthy(NGINX_PORT), 30);
    log('3 instances healthy behind nginx; demo data seeded once');
    db = knexFactory({ client: 'pg', connection: dbUrl, pool: { min: 0, max: 2 } });

    for (const user of USERS) await login(user);
    // The payment page's Checkout, on the demo organisation's active XOF account.
    const financeToken = token('finance@demo.example');
    const me = await call('GET', '/me', financeToken);
    const orgId = String((me.body.data?.organizations as Array<{ id: string }>)[0]?.id);
    const accounts = await call('GET', `/business/organizations/${orgId}/accounts`, financeToken);
    const xof = ((accounts.body.data?.data ?? []) as Array<{ id: string; currency_code: string; status: string }>).find((a) => a.currency_code === 'XOF' && a.status === 'active');
    const checkout = await call('POST', `/business/organizations/${orgId}/checkout`, financeToken, { destination_account_id: xof?.id });
    const code = String(checkout.body.data?.code);
    const webhooks = await pointWebhookAtReceiver(db, orgId);
    log(`webhooks: the demo organisation's endpoint points at the receiver on :${HOOK_PORT}, enabled`);

    const plan = { transfers: 60 * SCALE, payments: 12 * SCALE, escrows: 8 * SCALE, tontineCycles: 3, invoices: 8 * SCALE };
    const total = plan.transfers + plan.payments + plan.escrows * 2 + plan.tontineCycles * 4 + plan.invoices;
    log(
      `workload: ${plan.transfers} transfers, ${plan.payments} payment-page payments, ${plan.escrows} escrow lifecycles, a 4-member tontine over ${plan.tontineCycles} cycles, ${plan.invoices} invoices (4 transfer workers); webhooks to the receiver`,
    );
    const faultPlan: Array<[number, () => Promise<void>]> = [
      [0.2, killAndRestartInstance],
      [0.45, () => terminateBackends(admin)],
      [0.7, restartRedis],
    ];
    const faultRunner = (async () => {
      for (const [share, fault] of faultPlan) {
        while (state.progress < share * total) await sleep(100);
        await fault();
        await sleep(3000); // faults apart, each with work around it
      }
      state.faultsDone = true;
    })();
    await Promise.all([
      ...Array.from({ length: 4 }, () => transfers(plan.transfers / 4)),
      payments(plan.payments, code),
      escrows(plan.escrows),
      tontine(['admin@demo.example', 'cashier@demo.example', 'director@demo.example', 'representative@demo.example'], plan.tontineCycles),
      invoices(orgId, plan.invoices),
    ]);
    state.progress = Number.MAX_SAFE_INTEGER;
    await faultRunner;
    await restarted;
    log(`workload done: ${stats.requests} requests, ${stats.retries} retries, ${stats.networkErrors} lost answers, 5xx seen: ${JSON.stringify(Object.fromEntries(stats.status5xx))}`);
    for (const sample of stats.samples5xx) log(`  5xx (retried with the same key): ${sample}`);
    const outcomes = new Map<string, number>();
    for (const entry of JOURNAL) outcomes.set(`${entry.kind} ${entry.outcome}`, (outcomes.get(`${entry.kind} ${entry.outcome}`) ?? 0) + 1);
    log(`outcomes: ${[...outcomes].map(([k, n]) => `${k}: ${n}`).join(', ')}`);
    log(`faults: ${faults.join('; ')}`);
    if (faults.length !== faultPlan.length) throw new Error(`only ${faults.length} of ${faultPlan.length} faults happened`);
    await drainWebhooks(db, webhooks.endpointId, 60);

    // The checks must be able to fail: a one-sided entry must be reported, then removed.
    const remove = await injectBadLedgerRow(db);
    const caught = (await runChecks({ db, journal: JOURNAL }, CHECKS.slice(0, 1)))[0]?.violations.length ?? 0;
    if (env.DRILL_INJECT === 'ledger') {
      log('DRILL_INJECT=ledger: the one-sided entry stays; the checks below must fail');
    } else {
      await remove();
      if (caught === 0) throw new Error('self-check: a one-sided ledger entry was not reported by the ledger check');
      log(`self-check: a one-sided ledger entry was reported (${caught} violations), then removed`);
    }

    const reports = await runChecks({ db, journal: JOURNAL, webhooks, window: { from: instancesFrom, to: new Date(), instanceStarts: INSTANCE_PORTS.length + 1 } });
    reports.push({ name: 'instances: none exited by itself (only the kill -9, restarted)', violations: [...unexpectedExits], info: [] });
    let failed = 0;
    console.log('\ninvariants:');
    for (const report of reports) {
      console.log(`  ${report.violations.length === 0 ? 'ok  ' : 'FAIL'} ${report.name}`);
      for (const line of report.info) console.log(`       ${line}`);
      for (const violation of report.violations.slice(0, 10)) console.log(`       ${violation}`);
      if (report.violations.length > 10) console.log(`       ... ${report.violations.length - 10} more`);
      if (report.violations.length > 0) failed += 1;
    }
    const seconds = ((Date.now() - started) / 1000).toFixed(0);
    console.log(`\ndrill finished in ${seconds} s`);
    console.log(`drill: ${reports.length - failed} passed, ${failed} failed`);
    return failed === 0 ? 0 : 1;
  } catch (error) {
    console.error(`drill: ${error instanceof Error ? error.message : String(error)}`);
    for (const name of ['instance-0', 'instance-1', 'instance-2', 'nginx-error']) {
      try {
        const text = readFileSync(join(work, `${name}.log`), 'utf8').trim().split('\n').slice(-5).join('\n');
        if (text) console.error(`--- ${name}.log (last lines)\n${text}`);
      } catch {
        /* no such log */
      }
    }
    return 1;
  } finally {
    clearTimeout(watchdog);
    receiver?.closeAllConnections();
    receiver?.close();
    await db?.destroy();
    await teardown(admin);
  }
}

async function teardown(admin: Knex): Promise<void> {
  tearingDown = true;
  for (const child of [...children]) child.kill('SIGTERM');
  await sleep(1500);
  for (const child of [...children]) child.kill('SIGKILL');
  await admin.raw(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch((error: unknown) => console.error(`drop ${dbName}: ${String(error)}`));
  await admin.destroy();
  if (!env.DRILL_KEEP) rmSync(work, { recursive: true, force: true });
}

main().then((code) => process.exit(code));
