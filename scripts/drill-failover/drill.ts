// `make drill-failover`: PostgreSQL fails over under load and no acknowledged payment is lost.
//
// In a scratch folder: a pg_auto_failover monitor, a primary and a synchronous standby on local
// ports (Debian's packages; scripts/drill-failover/run.sh installs them), Redis, and two API
// instances in production mode whose DATABASE_URL names both nodes
// (`postgres://...@127.0.0.1:A,127.0.0.1:B/drill?target_session_attrs=read-write`). Clients of
// the shared drill workload (scripts/drill/workload.ts: transfers and escrow lifecycles, every
// answer journaled, 5xx and lost answers retried with the same Idempotency-Key) run against
// both instances while two faults strike: a planned switchover (`pg_autoctl perform
// switchover`), then `kill -9` of the new primary's postmaster. Then the checks: the ledger's
// invariants and exactly-once effects of scripts/drill/checks.ts (every acknowledged id is in
// the database, once), no 500 answered, no API process exited, each fault's write-failure
// window under DRILL_WINDOW_TARGET_S (15). It prints its figures and `N passed, M failed`.
//
// Ports (DRILL_FO_PORT, 18340): monitor +0, nodes +1 and +2, Redis +3; API instances on
// DRILL_FO_API_PORT (18310) and +10 (payment pages +1). Bounded by DRILL_TIMEOUT_S (300).
// As root, PostgreSQL runs as DRILL_PG_USER (postgres). DRILL_KEEP=1 keeps the scratch folder.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import { chmodSync, chownSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { createKnex } from '../../src/db/database';
import { CHECKS, runChecks, type CheckReport } from '../drill/checks';
import { configureWorkload, DRILL_RATE_LIMITS, escrows, JOURNAL, login, state, stats, topUps, transfers, USERS } from '../drill/workload';

const ROOT = resolve(__dirname, '../..');
const env = process.env;
const PG_BIN = env.DRILL_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const PG_USER = env.DRILL_PG_USER ?? 'postgres';
const BASE_PORT = Number(env.DRILL_FO_PORT ?? 18340);
const MONITOR_PORT = BASE_PORT;
const NODE_PORTS = [BASE_PORT + 1, BASE_PORT + 2];
const REDIS_PORT = BASE_PORT + 3;
const API_PORTS = [Number(env.DRILL_FO_API_PORT ?? 18310), Number(env.DRILL_FO_API_PORT ?? 18310) + 10];
const TIMEOUT_S = Number(env.DRILL_TIMEOUT_S ?? 300);
const WINDOW_TARGET_S = Number(env.DRILL_WINDOW_TARGET_S ?? 15);
const SCALE = Number(env.DRILL_SCALE ?? 1);
const DB = 'drill';
const asRoot = process.getuid?.() === 0;
const pgUid = asRoot ? Number(spawnSync('id', ['-u', PG_USER]).stdout.toString().trim()) : undefined;
const pgGid = asRoot ? Number(spawnSync('id', ['-g', PG_USER]).stdout.toString().trim()) : undefined;

const started = Date.now();
const work = mkdtempSync(join(tmpdir(), 'drill-failover-'));
if (asRoot) chownSync(work, pgUid as number, pgGid as number);
chmodSync(work, 0o755);
const dbUrl = `postgres://postgres@${NODE_PORTS.map((port) => `127.0.0.1:${port}`).join(',')}/${DB}?target_session_attrs=read-write&connect_timeout=2`;
const monitorUrl = `postgres://autoctl_node@127.0.0.1:${MONITOR_PORT}/pg_auto_failover?sslmode=disable`;

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

/** pg_autoctl as the PostgreSQL user, its configuration and state inside the scratch folder. */
function autoctlCommand(args: string[]): [string, string[]] {
  const vars = [`PATH=${PG_BIN}:${env.PATH ?? '/usr/bin:/bin'}`, `XDG_CONFIG_HOME=${work}/config`, `XDG_DATA_HOME=${work}/data`, `XDG_RUNTIME_DIR=${work}/run`];
  return asRoot ? ['runuser', ['-u', PG_USER, '--', 'env', ...vars, 'pg_autoctl', ...args]] : ['env', [...vars, 'pg_autoctl', ...args]];
}
function startAutoctl(name: string, args: string[]): ChildProcess {
  const [command, argv] = autoctlCommand(args);
  return startProcess(name, command, argv);
}
function runAutoctl(args: string[], timeoutMs = 60_000): Promise<{ code: number; output: string }> {
  const [command, argv] = autoctlCommand(args);
  return new Promise((done) => {
    const child = spawn(command, argv, { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      done({ code: code ?? 1, output });
    });
  });
}

const secrets = {
  JWT_SECRET: crypto.randomBytes(32).toString('hex'),
  PAY_SECRET: crypto.randomBytes(32).toString('hex'),
  API_KEY_PEPPER: crypto.randomBytes(32).toString('hex'),
  PII_ENCRYPTION_KEY: `drill:${crypto.randomBytes(32).toString('hex')}`,
  MOBILE_MONEY_CALLBACK_SECRET: `whsec_${crypto.randomBytes(32).toString('base64')}`,
  CRYPTO_NETWORK: 'sandbox',
  CRYPTO_ADDRESS_SECRET: crypto.randomBytes(32).toString('hex'),
  // Production names its notifier and its verification providers; the drill uses none of them.
  NOTIFIER: 'sandbox', IDENTITY_PROVIDER: 'sandbox', BUSINESS_VERIFICATION_PROVIDER: 'sandbox',
};
function apiEnv(index: number, mode: 'production' | 'development'): Record<string, string> {
  const port = API_PORTS[index] as number;
  return {
    NODE_ENV: mode,
    ...secrets,
    DATABASE_URL: dbUrl,
    REDIS_URL: `redis://127.0.0.1:${REDIS_PORT}`,
    PORT: String(port),
    PAY_PORT: String(port + 1),
    PAY_URL: `http://127.0.0.1:${port + 1}`,
    METRICS_PORT: '0',
    LOG_FORMAT: 'json',
    // DRILL_LOG_LEVEL=info keeps every request's line in api-N.log (with DRILL_KEEP=1).
    LOG_LEVEL: env.DRILL_LOG_LEVEL ?? 'warn',
    ...DRILL_RATE_LIMITS,
  };
}

const apis: Array<ChildProcess | undefined> = [];
const unexpectedExits: string[] = [];
let tearingDown = false;
function startApi(index: number): void {
  const child = startProcess(`api-${index}`, process.execPath, ['--import', 'tsx', 'src/main.ts'], apiEnv(index, 'production'));
  apis[index] = child;
  child.on('exit', (code, signal) => {
    if (tearingDown) return;
    let why = '';
    try {
      const lines = readFileSync(join(work, `api-${index}.log`), 'utf8').trim().split('\n');
      why = (lines.filter((line) => /"level":(50|60)|Error|Failed/.test(line)).pop() ?? lines.pop() ?? '').slice(0, 400);
    } catch {
      /* no log */
    }
    unexpectedExits.push(`API instance ${index} (pid ${child.pid}) exited: code ${code}, signal ${signal}; last error: ${why}`);
  });
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

// ---------------------------------------------------------------- the formation
interface NodeState {
  name: string;
  port: number;
  reported: string;
  goal: string;
}
let monitor: Knex | undefined;
async function nodes(): Promise<NodeState[]> {
  // Quiet: the monitor's role does not exist until it is initialised (the first probes fail).
  monitor ??= knexFactory({ client: 'pg', connection: monitorUrl, pool: { min: 0, max: 1 }, log: { error: () => undefined, warn: () => undefined } });
  const rows = (await monitor.raw('SELECT nodename AS name, nodeport AS port, reportedstate AS reported, goalstate AS goal FROM pgautofailover.node ORDER BY nodeid')).rows as NodeState[];
  return rows.map((row) => ({ ...row, port: Number(row.port) }));
}
const describeNodes = (list: NodeState[]): string => list.map((n) => `${n.name}:${n.port} ${n.reported}${n.reported === n.goal ? '' : `->${n.goal}`}`).join(', ');
/** A primary and a secondary, each in the state the monitor assigned: ready for the next fault. */
async function settled(): Promise<NodeState | undefined> {
  const list = await nodes();
  const primary = list.find((n) => n.reported === 'primary' && n.goal === 'primary');
  return primary && list.some((n) => n.reported === 'secondary' && n.goal === 'secondary') ? primary : undefined;
}

async function startFormation(): Promise<void> {
  const common = ['--hostname', '127.0.0.1', '--auth', 'trust', '--no-ssl'];
  startAutoctl('monitor', ['create', 'monitor', '--pgdata', `${work}/monitor`, '--pgport', String(MONITOR_PORT), ...common, '--run']);
  await waitFor('the monitor', async () => (await nodes()).length >= 0, 60);
  log(`monitor on :${MONITOR_PORT}`);
  for (const [index, port] of NODE_PORTS.entries()) {
    startAutoctl(`node-${index + 1}`, ['create', 'postgres', '--pgdata', `${work}/node-${index + 1}`, '--pgport', String(port), '--name', `node${index + 1}`, '--dbname', DB, '--monitor', monitorUrl, ...common, '--run']);
    if (index === 0) await waitFor('the first node', async () => (await nodes()).some((n) => n.reported === 'single' || n.reported === 'wait_primary' || n.reported === 'primary'), 90);
  }
  // The standby's base backup waits for a checkpoint (spread over minutes by default): ask for one.
  const first = knexFactory({ client: 'pg', connection: `postgres://postgres@127.0.0.1:${NODE_PORTS[0]}/${DB}`, pool: { min: 0, max: 1 } });
  try {
    await waitFor('the synchronous standby', async () => {
      await first.raw('CHECKPOINT').catch(() => undefined);
      return (await settled()) !== undefined;
    }, 150);
  } finally {
    await first.destroy();
  }
  log(`formation ready: ${describeNodes(await nodes())}`);
}

/** The primary's synchronous_standby_names and its standbys' sync_state, as the primary says. */
async function replicationState(): Promise<string> {
  const db = createKnex(dbUrl, 'postgres', 1);
  try {
    const names = (await db.raw('SHOW synchronous_standby_names')).rows[0].synchronous_standby_names as string;
    const standbys = (await db.raw('SELECT application_name, sync_state FROM pg_stat_replication')).rows as Array<{ application_name: string; sync_state: string }>;
    return `synchronous_standby_names = '${names}'; standbys: ${standbys.map((s) => `${s.application_name} ${s.sync_state}`).join(', ') || 'none'}`;
  } finally {
    await db.destroy();
  }
}

// ---------------------------------------------------------------- faults and the write-failure window
interface Attempt {
  began: number;
  ended: number;
  ok: boolean;
  status: number;
  error?: string;
}
const attempts: Attempt[] = [];
interface Fault {
  name: string;
  at: number;
  done?: number;
}
const faults: Fault[] = [];

async function switchover(): Promise<void> {
  const before = await nodes();
  const fault: Fault = { name: `planned switchover (pg_autoctl perform switchover; primary was ${before.find((n) => n.reported === 'primary')?.name})`, at: Date.now() };
  faults.push(fault);
  log(`fault: ${fault.name}`);
  const result = await runAutoctl(['perform', 'switchover', '--pgdata', `${work}/monitor`], 90_000);
  fault.done = Date.now();
  log(`switchover ${result.code === 0 ? 'done' : `exited ${result.code}: ${result.output.trim().split('\n').slice(-2).join(' | ')}`} in ${((fault.done - fault.at) / 1000).toFixed(1)} s: ${describeNodes(await nodes())}`);
}

async function killPrimaryPostmaster(): Promise<void> {
  const primary = (await nodes()).find((n) => n.reported === 'primary');
  if (!primary) throw new Error('no primary to kill');
  const index = NODE_PORTS.indexOf(primary.port);
  const pid = Number(readFileSync(join(work, `node-${index + 1}`, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const fault: Fault = { name: `kill -9 of the primary's postmaster (${primary.name}, pid ${pid})`, at: Date.now() };
  faults.push(fault);
  log(`fault: ${fault.name}`);
  process.kill(pid, 'SIGKILL');
}

/**
 * The write-failure window of a fault: the longest time, after the fault began and before the
 * next one (or the end), between two successful writes (their answers) with at least one failed
 * write (a 5xx or no answer) in between. Eight clients write all the time, so as long as one
 * write succeeds somewhere, writes work; the window is how long none did.
 */
function windowOf(fault: Fault, until: number): { seconds: number; failed: number } {
  const span = attempts.filter((a) => a.ended >= fault.at && a.ended < until);
  const failures = span.filter((a) => !a.ok);
  if (failures.length === 0) return { seconds: 0, failed: 0 };
  const successes = [fault.at, ...span.filter((a) => a.ok).map((a) => a.ended), until].sort((a, b) => a - b);
  let longest = 0;
  for (let i = 1; i < successes.length; i += 1) {
    const from = successes[i - 1] as number;
    const to = successes[i] as number;
    if (failures.some((f) => f.ended > from && f.ended <= to)) longest = Math.max(longest, to - from);
  }
  return { seconds: longest / 1000, failed: failures.length };
}

// ---------------------------------------------------------------- main
async function main(): Promise<number> {
  let db: Knex | undefined;
  const watchdog = setTimeout(() => {
    console.error(`drill-failover: over its ${TIMEOUT_S} s bound: stopping (FAIL)`);
    void teardown().finally(() => process.exit(2));
  }, TIMEOUT_S * 1000);
  try {
    log(`scratch folder ${work}`);
    await startFormation();
    startProcess('redis', 'redis-server', ['--port', String(REDIS_PORT), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']);
    // The demo data (users with balances) is seeded in development mode, through the multi-host URL.
    const seed = startProcess('seed', process.execPath, ['--import', 'tsx', 'scripts/seed.ts'], apiEnv(0, 'development'));
    const seeded = await new Promise<number>((done) => seed.on('exit', (code) => done(code ?? 1)));
    if (seeded !== 0) throw new Error(`seed failed: ${readFileSync(join(work, 'seed.log'), 'utf8').slice(-800)}`);
    for (const index of API_PORTS.keys()) startApi(index);
    for (const port of API_PORTS) await waitFor(`API instance on ${port}`, healthy(port), 120);
    log(`2 API instances (production mode) healthy on :${API_PORTS.join(', :')}; DATABASE_URL=${dbUrl}`);
    log(`replication: ${await replicationState()}`);

    configureWorkload({
      apis: API_PORTS.map((port) => `http://127.0.0.1:${port}/api`),
      onAttempt: ({ began, ended, status, error }) => attempts.push({ began, ended, status, error, ok: status >= 200 && status < 500 && !(status === 409 && error === 'ConcurrentOperation') }),
      mobileMoneyCallbackSecret: secrets.MOBILE_MONEY_CALLBACK_SECRET,
    });
    for (const user of USERS) await login(user);

    const plan = { transfers: 120 * SCALE, escrows: 12 * SCALE, topUps: 12 * SCALE };
    const total = plan.transfers + plan.escrows * 2 + plan.topUps * 2;
    log(
      `workload: ${plan.transfers} transfers (6 workers, more until both faults struck), ${plan.escrows} escrow lifecycles (2 workers), ${plan.topUps} top-ups settled by signed callbacks (1 worker), over both instances`,
    );
    const faultRunner = (async () => {
      while (state.progress < 0.2 * total) await sleep(100);
      await switchover();
      await waitFor('the formation after the switchover', async () => (await settled()) !== undefined, 90);
      log(`after the switchover: ${await replicationState().catch((error: unknown) => String(error))}`);
      await sleep(2_000);
      await killPrimaryPostmaster();
      // Some work after the fault, so the window closes on writes that succeeded.
      const progressAtKill = state.progress;
      await waitFor('writes after the kill', async () => state.progress > progressAtKill + 20, 120);
      state.faultsDone = true;
    })();
    const workers = [
      ...Array.from({ length: 6 }, () => transfers(plan.transfers / 6)),
      ...Array.from({ length: 2 }, () => escrows(plan.escrows / 2)),
      topUps(plan.topUps),
    ];
    await Promise.all([...workers, faultRunner]);
    state.progress = Number.MAX_SAFE_INTEGER;
    const end = Date.now();
    await waitFor('the formation to settle after the kill', async () => (await settled()) !== undefined, 90).catch(() => log('the formation did not settle within 90 s'));
    log(`formation after the drill: ${describeNodes(await nodes())}`);

    log(`workload done: ${stats.requests} requests, ${stats.retries} retries, ${stats.networkErrors} lost answers, 5xx seen: ${JSON.stringify(Object.fromEntries(stats.status5xx))}`);
    for (const sample of stats.samples5xx) log(`  5xx (retried with the same key): ${sample}`);
    const outcomes = new Map<string, number>();
    for (const entry of JOURNAL) outcomes.set(`${entry.kind} ${entry.outcome}`, (outcomes.get(`${entry.kind} ${entry.outcome}`) ?? 0) + 1);
    log(`outcomes: ${[...outcomes].map(([k, n]) => `${k}: ${n}`).join(', ')}`);

    // What the instances logged: host selections started again, COMMITs whose outcome was unknown.
    const logged = (pattern: RegExp): number => API_PORTS.reduce((sum, _port, index) => sum + (readFileSync(join(work, `api-${index}.log`), 'utf8').match(pattern)?.length ?? 0), 0);
    log(`instances logged ${logged(/database failover: finding the primary again/g)} host re-selections and ${logged(/the COMMIT's outcome is unknown/g)} COMMITs of unknown outcome (answered 503, settled by their keys)`);
    const windows = faults.map((fault, index) => ({ fault, ...windowOf(fault, faults[index + 1]?.at ?? end) }));
    for (const w of windows) log(`write-failure window of the ${w.fault.name}: ${w.seconds.toFixed(1)} s (${w.failed} failed write attempts)`);

    db = createKnex(dbUrl, 'postgres', 2);
    const wanted = ['ledger:', 'transfers:', 'escrows:', 'escrow holding:', 'top-ups:'];
    const reports: CheckReport[] = await runChecks({ db, journal: JOURNAL }, CHECKS.filter((check) => wanted.some((prefix) => check.name.startsWith(prefix))));
    const acknowledged = JOURNAL.filter((e) => e.outcome === 'acknowledged').length;
    reports.unshift({ name: `journal: ${acknowledged} acknowledged operations, each checked below`, violations: acknowledged > 0 ? [] : ['nothing was acknowledged'], info: [] });
    reports.push({ name: 'faults: a switchover and a kill -9 of the primary both struck during the workload', violations: faults.length === 2 ? [] : [`${faults.length} of 2 faults happened`], info: faults.map((f) => f.name) });
    reports.push({ name: 'no request answered 500 (a failover answers 503 with Retry-After)', violations: stats.status5xx.get(500) ? [`${stats.status5xx.get(500)} answers were 500`] : [], info: [] });
    reports.push({ name: 'API instances: none exited', violations: [...unexpectedExits], info: [] });
    reports.push({
      name: `write-failure window under ${WINDOW_TARGET_S} s for each fault`,
      violations: windows.filter((w) => w.seconds >= WINDOW_TARGET_S).map((w) => `${w.fault.name}: ${w.seconds.toFixed(1)} s`),
      info: windows.map((w) => `${w.fault.name}: ${w.seconds.toFixed(1)} s, ${w.failed} failed attempts`),
    });
    let failed = 0;
    console.log('\nchecks:');
    for (const report of reports) {
      console.log(`  ${report.violations.length === 0 ? 'ok  ' : 'FAIL'} ${report.name}`);
      for (const line of report.info) console.log(`       ${line}`);
      for (const violation of report.violations.slice(0, 10)) console.log(`       ${violation}`);
      if (report.violations.length > 10) console.log(`       ... ${report.violations.length - 10} more`);
      if (report.violations.length > 0) failed += 1;
    }
    console.log(`\ndrill-failover finished in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    console.log(`${reports.length - failed} passed, ${failed} failed`);
    return failed === 0 ? 0 : 1;
  } catch (error) {
    console.error(`drill-failover: ${error instanceof Error ? error.message : String(error)}`);
    for (const name of ['api-0', 'api-1', 'seed', 'monitor', 'node-1', 'node-2']) {
      try {
        const text = readFileSync(join(work, `${name}.log`), 'utf8').trim().split('\n').slice(-5).join('\n');
        if (text) console.error(`--- ${name}.log (last lines)\n${text}`);
      } catch {
        /* no such log */
      }
    }
    console.log('0 passed, 1 failed');
    return 1;
  } finally {
    clearTimeout(watchdog);
    await db?.destroy();
    await teardown();
  }
}

async function teardown(): Promise<void> {
  tearingDown = true;
  await monitor?.destroy().catch(() => undefined);
  for (const child of [...children]) child.kill('SIGTERM');
  await sleep(2_000);
  for (const child of [...children]) child.kill('SIGKILL');
  // pg_autoctl's Postgres children outlive a killed supervisor: stop each data directory.
  for (const dir of ['node-1', 'node-2', 'monitor']) {
    const [command, argv] = autoctlCommand(['stop', '--pgdata', `${work}/${dir}`, '--immediate']);
    spawnSync(command, argv, { stdio: 'ignore', timeout: 15_000 });
    spawnSync(asRoot ? 'runuser' : `${PG_BIN}/pg_ctl`, asRoot ? ['-u', PG_USER, '--', `${PG_BIN}/pg_ctl`, 'stop', '-m', 'immediate', '-D', `${work}/${dir}`] : ['stop', '-m', 'immediate', '-D', `${work}/${dir}`], { stdio: 'ignore', timeout: 15_000 });
  }
  if (!env.DRILL_KEEP) rmSync(work, { recursive: true, force: true });
}

void main().then((code) => process.exit(code));
