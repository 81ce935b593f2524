import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import knexFactory, { type Knex } from 'knex';
import { loadConfig } from '../../src/config';
import { createKnex, migrateLatest } from '../../src/db/database';
import { withTransaction } from '../../src/db/transaction';
import { SessionService, TokenService } from '../../src/modules/auth';
import { fundWallet } from '../../src/modules/ledger';
import type { OperationId } from '../../src/contract';

/** The operationId POST /transfers' keys are scoped to (the pipeline names the operation). */
const CREATE_TRANSFER_OPERATION: OperationId = 'createTransfer';

export interface LoadResult {
  requests_per_s: number;
  p50_ms: number;
  p99_ms: number;
  non_2xx: number;
  errors: number;
  total: number;
}

export async function runAutocannon(options: autocannon.Options): Promise<LoadResult> {
  const result = await autocannon(options);
  return {
    requests_per_s: Math.round(result.requests.average),
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    non_2xx: result.non2xx,
    errors: result.errors,
    total: result.requests.total,
  };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** Peak resident set size of the server process so far (VmHWM), in MB. */
  peakRssMb(): Promise<number>;
  /** CPU time (user + system) the server process has used so far, in ms: divided by the requests
   * of a run it gives the CPU each request costs, which a busy machine inflates far less than
   * throughput or latency. */
  cpuMs(): Promise<number>;
  /** The group commit's batch sizes so far (api-server.ts only; undefined for other servers). */
  batchSizes(): Promise<BatchSizes | undefined>;
  stop(): Promise<void>;
}

/** Batches sent by the transfers' group commit: sizes[n] = batches of n transfers; failed = batches run again item by item. */
export interface BatchSizes {
  sizes: number[];
  failed: number;
  /** The same for the windows of escrow fund and accept, and of tontine contributions: one per write_apply_batch. */
  windows?: { escrows: { sizes: number[]; failed: number }; tontines: { sizes: number[]; failed: number } };
}

/** Batches between two readings: how many, their mean, median and largest size, those that failed, and the count per size. */
export interface BatchDistribution {
  batches: number;
  mean: number;
  p50: number;
  max: number;
  failed: number;
  by_size: Record<string, number>;
}

/** The batches sent between two readings of the server's counters: how many, their mean, median and largest size, and the count per size. */
export function batchDistribution(before: BatchSizes | undefined, after: BatchSizes | undefined): BatchDistribution {
  const counts = (after?.sizes ?? []).map((n, size) => n - (before?.sizes[size] ?? 0));
  const batches = counts.reduce((sum, n) => sum + n, 0);
  const items = counts.reduce((sum, n, size) => sum + n * size, 0);
  let seen = 0;
  let p50 = 0;
  for (let size = 0; size < counts.length; size += 1) {
    seen += counts[size] ?? 0;
    if (seen * 2 >= batches && batches > 0) {
      p50 = size;
      break;
    }
  }
  const bySize: Record<string, number> = {};
  counts.forEach((n, size) => {
    if (n > 0) bySize[String(size)] = n;
  });
  return {
    batches,
    mean: Number((items / Math.max(1, batches)).toFixed(2)),
    p50,
    max: counts.reduce((max, n, size) => (n > 0 ? size : max), 0),
    failed: (after?.failed ?? 0) - (before?.failed ?? 0),
    by_size: bySize,
  };
}


/** USER_HZ of /proc/PID/stat: 100 on Linux x86_64 and arm64. */
const CLOCK_TICKS_PER_S = 100;

function hasTaskset(): boolean {
  return fs.existsSync('/usr/bin/taskset');
}

/** Starts a TypeScript server script with tsx on core 0 (BENCH_SERVER_CPUS); it must print `LISTENING <port>`. */
export async function startServerProcess(script: string, env: Record<string, string> = {}): Promise<ServerProcess> {
  const port = await freePort();
  const tsx = 'node_modules/.bin/tsx';
  // BENCH_NODE_ARGS passes Node flags to the server only (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
  const nodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  // BENCH_SERVER_CPUS=all lets the server run on every core (default: core 0 only).
  const cpus = process.env.BENCH_SERVER_CPUS ?? '0';
  const [command, args] = hasTaskset() && cpus !== 'all' ? ['taskset', ['-c', cpus, tsx, ...nodeArgs, script]] : [tsx, [...nodeArgs, script]];
  const child = spawn(command, args, {
    env: { SINGLE_INSTANCE: 'true', NOTIFIER: 'sandbox', IDENTITY_PROVIDER: 'sandbox', BUSINESS_VERIFICATION_PROVIDER: 'sandbox', ...process.env, ...env, PORT: String(port), NODE_ENV: env.NODE_ENV ?? 'production' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start`)), 120_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('LISTENING')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  /** The node process running `script` (taskset and tsx put it a few levels down). */
  const serverPid = async (): Promise<number | undefined> => {
    const queue = [child.pid as number];
    while (queue.length) {
      const pid = queue.shift() as number;
      try {
        const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        if (cmdline.includes(script) && cmdline.startsWith(process.execPath)) return pid;
        const children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
        queue.push(...children.map(Number));
      } catch {
        // the process ended meanwhile
      }
    }
    return undefined;
  };
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    async peakRssMb() {
      const pid = await serverPid();
      try {
        const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
        const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
        return Math.round(kb / 1024);
      } catch {
        return -1;
      }
    },
    async cpuMs() {
      const pid = await serverPid();
      return pid === undefined ? -1 : Math.round(processCpuMs(pid) ?? -1);
    },
    async batchSizes() {
      const pid = await serverPid();
      if (pid === undefined) return undefined;
      return new Promise<BatchSizes | undefined>((resolve) => {
        const timer = setTimeout(() => done(undefined), 5_000);
        const onData = (chunk: Buffer) => {
          const line = /BATCHES (.*)/.exec(chunk.toString())?.[1];
          if (line) done(JSON.parse(line) as BatchSizes);
        };
        const done = (value: BatchSizes | undefined) => {
          clearTimeout(timer);
          child.stdout?.off('data', onData);
          resolve(value);
        };
        child.stdout?.on('data', onData);
        process.kill(pid, 'SIGUSR2');
      });
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        // A profiled server writes its profile at exit: give it longer on a loaded machine.
        setTimeout(() => child.kill('SIGKILL'), process.env.BENCH_NODE_ARGS ? 120_000 : 15_000).unref();
      }),
  };
}

/**
 * CPU time (user + system, in ms) of one process from /proc/PID/stat, with that of its ended
 * children when asked; undefined when it is gone.
 */
function processCpuMs(pid: number | string, withEndedChildren = false): number | undefined {
  try {
    // Fields 14-17 of /proc/PID/stat (after the parenthesised command name): utime, stime,
    // cutime, cstime (the last two: children it has waited for).
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ticks = stat.slice(stat.lastIndexOf(')') + 2).split(' ').slice(11, withEndedChildren ? 15 : 13).map(Number);
    return (ticks.reduce((sum, tick) => sum + tick, 0) * 1000) / CLOCK_TICKS_PER_S;
  } catch {
    return undefined;
  }
}

/**
 * CPU time used so far by the local PostgreSQL server, in ms: every live postgres process, plus
 * the backends that ended (counted in the postmaster's children time). The database's share of
 * a run when the server is on this machine (0 when it is not).
 */
export function postgresCpuMs(): number {
  let total = 0;
  for (const pid of fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
    } catch {
      continue;
    }
    total += processCpuMs(pid, true) ?? 0;
  }
  return Math.round(total);
}

export function printResult(name: string, result: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ bench: name, ...result }, null, 2)}\n`);
}

export const BENCH_SERVER_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const BENCH_JWT_SECRET = process.env.JWT_SECRET ?? 'bench-secret-bench-secret-bench-secret-0123';
/** The benchmarks' key of personal data at rest (production mode refuses the development default). */
export const BENCH_PII_KEY = process.env.PII_ENCRYPTION_KEY ?? `bench:${'be'.repeat(32)}`;

/**
 * The configuration the benchmarks sign sessions with: production's rules, the benchmark's
 * secrets, on the benchmark's PostgreSQL server (production refuses the embedded database).
 */
export function benchConfig() {
  return loadConfig({
    ...process.env,
    NODE_ENV: 'production',
    DATABASE_URL: BENCH_SERVER_URL,
    JWT_SECRET: BENCH_JWT_SECRET,
    PAY_SECRET: 'bench-pay-secret-bench-pay-secret-0123456',
    API_KEY_PEPPER: 'bench-api-key-pepper-bench-api-key-pepper-0',
    PII_ENCRYPTION_KEY: BENCH_PII_KEY,
    MOBILE_MONEY_CALLBACK_SECRET: `whsec_${'be'.repeat(24)}`,
    CRYPTO_NETWORK: 'sandbox',
    CRYPTO_ADDRESS_SECRET: 'b'.repeat(40),
    SINGLE_INSTANCE: 'true',
    NOTIFIER: 'sandbox',
    IDENTITY_PROVIDER: 'sandbox',
    BUSINESS_VERIFICATION_PROVIDER: 'sandbox',
  });
}

export interface ScratchDatabase {
  name: string;
  url: string;
  knex: Knex;
  /** Closes the pool and drops the database (kept when BENCH_KEEP_DATABASE is set). */
  drop(): Promise<void>;
}

/** A fresh, migrated database on the benchmark's PostgreSQL server. */
export async function createScratchDatabase(prefix: string): Promise<ScratchDatabase> {
  const name = `${prefix}_${Date.now()}_${crypto.randomBytes(2).toString('hex')}`;
  const admin = knexFactory({ client: 'pg', connection: BENCH_SERVER_URL, pool: { min: 0, max: 1 } });
  await admin.raw(`CREATE DATABASE ${name}`);
  const url = new URL(BENCH_SERVER_URL);
  url.pathname = `/${name}`;
  const knex = createKnex(url.toString(), 'postgres', 4);
  const drop = async (): Promise<void> => {
    await knex.destroy();
    if (!process.env.BENCH_KEEP_DATABASE) await admin.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.destroy();
  };
  try {
    await migrateLatest(knex);
  } catch (error) {
    await drop();
    throw error;
  }
  return { name, url: url.toString(), knex, drop };
}

/** An organisation with `module` open and a finance manager in it, with a real access token. */
export async function createBenchMember(knex: Knex, module: string): Promise<{ orgId: string; userId: string; token: string }> {
  const [org] = (await knex('organizations').insert({ name: 'Bench Trading SARL' }).returning('id')) as Array<{ id: string }>;
  const orgId = (org as { id: string }).id;
  await knex('organization_modules').insert({ organization_id: orgId, module, access: 'open' });
  const [user] = (await knex('users').insert({ email: `bench-${Date.now()}@bench.example`, password_hash: 'not-a-login' }).returning('id')) as Array<{ id: string }>;
  const userId = (user as { id: string }).id;
  await knex('memberships').insert({ organization_id: orgId, user_id: userId, role: 'finance_manager' });
  const config = benchConfig();
  const { access_token: token } = await new SessionService(knex, new TokenService(config.jwt)).open(knex, { id: userId, is_admin: false });
  return { orgId, userId, token };
}

/**
 * The probes' parties: `count` users (`party-<i>@probe.example`), each with a funded XOF
 * wallet and an open session, the rows transferScript's pgbench script picks from.
 */
export async function fundedProbeParties(knex: Knex, count: number): Promise<void> {
  const config = benchConfig();
  const sessions = new SessionService(knex, new TokenService(config.jwt));
  const users = (await knex('users')
    .insert(Array.from({ length: count }, (_, i) => ({ email: `party-${i}@probe.example`, password_hash: 'not-a-login' })))
    .returning(['id'])) as Array<{ id: string }>;
  await withTransaction(knex, async (trx) => {
    for (const user of users) await fundWallet(trx, user.id, 'XOF', 1_000_000_000_000n);
  });
  for (const user of users) await sessions.open(knex, { id: user.id, is_admin: false });
}

export interface TransferScript {
  /** The pgbench script file. */
  script: string;
  /** Drops the parties table and the script. */
  remove(): Promise<void>;
}

/**
 * A pgbench script that sends what POST /transfers sends the database for a transfer alone in
 * its window (a fresh key per call): the session's check, the parties' read and
 * write_apply_batch with the transfer's claim and decision, between the users that have a
 * session in `knex`'s database: each call draws a sender and a different recipient among them.
 * Needs at least two such users.
 */
export async function transferScript(knex: Knex): Promise<TransferScript> {
  await knex.raw(`DROP TABLE IF EXISTS bench_parties`);
  await knex.raw(`CREATE TABLE bench_parties AS
    SELECT row_number() OVER (ORDER BY s.user_id)::int AS i, s.id AS session_id, s.user_id, u.email
      FROM sessions s JOIN users u ON u.id = s.user_id`);
  const parties = Number((await knex('bench_parties').count<Array<{ n: string }>>({ n: '*' }))[0]?.n);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgbench-transfer-'));
  const script = path.join(dir, 'transfer.sql');
  const amount = '(1 + :i % 100)';
  fs.writeFileSync(
    script,
    `\\set i random(1, ${parties})
\\set j 1 + (:i + random(0, ${parties - 2})) % ${parties}
SELECT s.id, s.revoked_at, s.expires_at, u.status, u.is_admin FROM bench_parties f JOIN sessions s ON s.id = f.session_id JOIN users u ON u.id = s.user_id WHERE f.i = :i;
SELECT s.id, s.status, r.id, r.status FROM bench_parties f JOIN bench_parties p ON p.i = :j JOIN users s ON s.id = f.user_id
  LEFT JOIN LATERAL (SELECT u.id, u.status FROM users u WHERE u.email = p.email LIMIT 1) r ON true WHERE f.i = :i;
SELECT count(*) FROM bench_parties f, bench_parties r, (SELECT gen_random_uuid() AS id, gen_random_uuid() AS token) x,
  LATERAL write_apply_batch(jsonb_build_array(jsonb_build_object(
    'claim', jsonb_build_object('user_id', f.user_id, 'organization_id', NULL, 'operation', '${CREATE_TRANSFER_OPERATION}', 'key', gen_random_uuid()::text,
      'request_hash', encode(sha256(random()::text::bytea), 'hex'), 'claim_token', x.token, 'lease_seconds', 60, 'ttl_hours', 24),
    'decision', jsonb_build_object(
      'postings', jsonb_build_array(jsonb_build_object('kind', 'transfer.p2p', 'reference', x.id, 'metadata', jsonb_build_object('transfer_id', x.id, 'sender_user_id', f.user_id, 'rail', 'p2p'),
        'entries', jsonb_build_array(
          jsonb_build_object('account', jsonb_build_object('owner_type', 'user', 'owner_id', f.user_id, 'currency', 'XOF', 'kind', 'wallet'), 'amount_minor', (-${amount})::text),
          jsonb_build_object('account', jsonb_build_object('owner_type', 'user', 'owner_id', r.user_id, 'currency', 'XOF', 'kind', 'wallet'), 'amount_minor', ${amount}::text)))),
      'changes', jsonb_build_array(jsonb_build_object('table', 'transfers', 'op', 'insert', 'posting_ids', jsonb_build_object('posting_id', 0),
        'set', jsonb_build_object('id', x.id, 'sender_user_id', f.user_id, 'rail', 'p2p', 'status', 'completed', 'currency', 'XOF', 'amount_minor', ${amount}::text,
          'recipient_type', 'user', 'recipient_identifier', r.email, 'recipient_user_id', r.user_id, 'note', NULL, 'created_at', now(), 'updated_at', now()))),
      'key', jsonb_build_object('claim_token', x.token, 'response_status', 200, 'resource_type', 'transfer', 'resource_id', x.id, 'resource_status', 'completed',
        'resource_location', '/api/transfers/' || x.id))))) b
 WHERE f.i = :i AND r.i = :j;
`,
  );
  return {
    script,
    async remove() {
      fs.rmSync(dir, { recursive: true, force: true });
      await knex.raw('DROP TABLE IF EXISTS bench_parties');
    },
  };
}

/** Runs a custom pgbench script (prepared protocol) for `seconds` with `clients` clients. */
export function runPgbenchScript(url: string, script: string, clients: number, seconds: number): { tps: number; transactions: number } {
  const run = spawnSync('pgbench', ['-n', '-c', String(clients), '-j', String(Math.min(clients, os.cpus().length)), '-T', String(seconds), '-M', 'prepared', '-f', script, url], {
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`pgbench failed: ${run.stderr}`);
  return {
    tps: Math.round(Number(/tps = ([\d.]+) \(without initial connection time\)/.exec(run.stdout)?.[1])),
    transactions: Number(/number of transactions actually processed: (\d+)/.exec(run.stdout)?.[1]),
  };
}

/** CPU milliseconds per unit of work, two decimals. */
export function perUnit(cpuMs: number, units: number): number {
  return Number((cpuMs / Math.max(1, units)).toFixed(2));
}

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** pgbench TPC-B, scale 10, `clients` clients, on a scratch database: tps and latency percentiles. */
export function runPgbench(url: string, clients: number, durationS: number): { tps: number; p50_ms: number; p99_ms: number; transactions: number } {
  const init = spawnSync('pgbench', ['-i', '-s', '10', '-q', url], { encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`pgbench -i failed: ${init.stderr}`);
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgbench-'));
  const run = spawnSync(
    'pgbench',
    ['-c', String(clients), '-j', String(Math.min(clients, os.cpus().length)), '-T', String(durationS), '-M', 'prepared', '-l', '--log-prefix', path.join(logDir, 'tx'), url],
    { encoding: 'utf8', cwd: logDir },
  );
  if (run.status !== 0) throw new Error(`pgbench failed: ${run.stderr}`);
  const tps = Number(/tps = ([\d.]+) \(without initial connection time\)/.exec(run.stdout)?.[1] ?? /tps = ([\d.]+)/.exec(run.stdout)?.[1]);
  // Per-transaction log lines: client_id transaction_no time_us script_no time_epoch time_us_of_epoch
  const latencies: number[] = [];
  for (const file of fs.readdirSync(logDir)) {
    for (const line of fs.readFileSync(path.join(logDir, file), 'utf8').split('\n')) {
      const us = Number(line.split(' ')[2]);
      if (Number.isFinite(us) && us > 0) latencies.push(us / 1000);
    }
  }
  fs.rmSync(logDir, { recursive: true, force: true });
  latencies.sort((a, b) => a - b);
  return { tps: Math.round(tps), p50_ms: Number(percentile(latencies, 50).toFixed(2)), p99_ms: Number(percentile(latencies, 99).toFixed(2)), transactions: latencies.length };
}

/** `count` users (`<prefix>-<run>-<i>@bench.example`), each with a large funded XOF wallet and an open session (its access token). */
export async function benchUsers(knex: Knex, count: number, prefix: string): Promise<Array<{ id: string; email: string; token: string }>> {
  const config = benchConfig();
  const sessions = new SessionService(knex, new TokenService(config.jwt));
  const run = crypto.randomBytes(3).toString('hex');
  const rows = (await knex('users')
    .insert(Array.from({ length: count }, (_, i) => ({ email: `${prefix}-${run}-${i}@bench.example`, password_hash: 'not-a-login' })))
    .returning(['id', 'email'])) as Array<{ id: string; email: string }>;
  await withTransaction(knex, async (trx) => {
    for (const row of rows) await fundWallet(trx, row.id, 'XOF', 1_000_000_000_000n);
  });
  const users: Array<{ id: string; email: string; token: string }> = [];
  for (const row of rows) users.push({ ...row, token: (await sessions.open(knex, { id: row.id, is_admin: false })).access_token });
  return users;
}

/** POST `body` to the API as the holder of `token` (with a fresh Idempotency-Key); the `data` of a 2xx answer, else it throws. */
export async function apiPost<T = { id: string }>(url: string, token: string, body: unknown = {}): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() },
    body: JSON.stringify(body),
  });
  const answer = (await res.json()) as { data?: T };
  if (!res.ok) throw new Error(`POST ${url}: ${res.status} ${JSON.stringify(answer).slice(0, 300)}`);
  return answer.data as T;
}

/** Runs `work` over `items`, `concurrency` at a time, in order of start; the results in the items' order. */
export async function inParallel<T, R>(items: readonly T[], concurrency: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results;
}

/** One load point of a money route against pgbench TPC-B at the same client count, in the same run. */
export interface PostingLoadPoint {
  connections: number;
  ours: LoadResult & { server_cpu_ms_per_request: number; postgres_cpu_ms_per_request: number };
  /** The windows of escrow actions and tontine contributions during the load: one per write_apply_batch. */
  window_batches: { escrows: BatchDistribution; tontines: BatchDistribution };
  pgbench_tpcb_scale10: { clients: number; tps: number; p50_ms: number; p99_ms: number; transactions: number; postgres_cpu_ms_per_transaction: number };
  /** Successful money requests per second (each one posting, one transaction) over TPC-B transactions per second. */
  ratio_tps: number;
}

/**
 * Runs `requests` (autocannon, `connections`, `durationS`) against the API, then pgbench TPC-B
 * on `tpcbUrl` with as many clients (capped to the connections PostgreSQL has left), and the CPU
 * each side spends per unit of work (from /proc: a busy machine inflates it far less than
 * throughput). Only 2xx answers count as work done.
 */
export async function postingsAgainstTpcb(
  server: ServerProcess,
  knex: Knex,
  tpcbUrl: string,
  requests: autocannon.Request[],
  connections: number,
  durationS: number,
): Promise<PostingLoadPoint> {
  const batchesBefore = await server.batchSizes();
  const cpuBefore = await server.cpuMs();
  const postgresCpuBefore = postgresCpuMs();
  const ours = await runAutocannon({ url: server.url, duration: durationS, connections, requests });
  const batchesAfter = await server.batchSizes();
  const windowBatches = {
    escrows: batchDistribution(batchesBefore?.windows?.escrows, batchesAfter?.windows?.escrows),
    tontines: batchDistribution(batchesBefore?.windows?.tontines, batchesAfter?.windows?.tontines),
  };
  const succeeded = ours.total - ours.non_2xx - ours.errors;
  const serverCpuMsPerRequest = perUnit((await server.cpuMs()) - cpuBefore, ours.total);
  const postgresCpuMsPerRequest = perUnit(postgresCpuMs() - postgresCpuBefore, ours.total);
  const maxConnections = Number((await knex.raw<{ rows: Array<{ max_connections: string }> }>('SHOW max_connections')).rows[0]?.max_connections ?? 100);
  const used = Number((await knex.raw<{ rows: Array<{ n: string }> }>('SELECT count(*) AS n FROM pg_stat_activity')).rows[0]?.n ?? 0);
  const clients = Math.max(1, Math.min(connections, maxConnections - used - 5));
  const postgresCpuBeforePgbench = postgresCpuMs();
  const pgbench = runPgbench(tpcbUrl, clients, durationS);
  const postgresCpuMsPerTpcb = perUnit(postgresCpuMs() - postgresCpuBeforePgbench, pgbench.transactions);
  return {
    connections,
    ours: { ...ours, server_cpu_ms_per_request: serverCpuMsPerRequest, postgres_cpu_ms_per_request: postgresCpuMsPerRequest },
    window_batches: windowBatches,
    pgbench_tpcb_scale10: { clients, ...pgbench, postgres_cpu_ms_per_transaction: postgresCpuMsPerTpcb },
    ratio_tps: Number(((ours.requests_per_s * succeeded) / Math.max(1, ours.total) / Math.max(1, pgbench.tps)).toFixed(3)),
  };
}
