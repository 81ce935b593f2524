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
import { CREATE_TRANSFER_OPERATION } from '../../src/modules/transfers';

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
    env: { SINGLE_INSTANCE: 'true', ...process.env, ...env, PORT: String(port), NODE_ENV: env.NODE_ENV ?? 'production' },
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
  const config = loadConfig({ ...process.env, NODE_ENV: 'production', JWT_SECRET: BENCH_JWT_SECRET, PAY_SECRET: 'bench-pay-secret-bench-pay-secret-0123456', API_KEY_PEPPER: 'bench-api-key-pepper-bench-api-key-pepper-0', SINGLE_INSTANCE: 'true' });
  const { access_token: token } = await new SessionService(knex, new TokenService(config.jwt)).open({ id: userId, is_admin: false });
  return { orgId, userId, token };
}

/**
 * The probes' parties: `count` users (`party-<i>@probe.example`), each with a funded XOF
 * wallet and an open session, the rows transferCreateScript's pgbench script picks from.
 */
export async function fundedProbeParties(knex: Knex, count: number): Promise<void> {
  const config = loadConfig({ ...process.env, NODE_ENV: 'production', JWT_SECRET: BENCH_JWT_SECRET, PAY_SECRET: 'bench-pay-secret-bench-pay-secret-0123456', API_KEY_PEPPER: 'bench-api-key-pepper-bench-api-key-pepper-0', SINGLE_INSTANCE: 'true' });
  const sessions = new SessionService(knex, new TokenService(config.jwt));
  const users = (await knex('users')
    .insert(Array.from({ length: count }, (_, i) => ({ email: `party-${i}@probe.example`, password_hash: 'not-a-login' })))
    .returning(['id'])) as Array<{ id: string }>;
  await withTransaction(knex, async (trx) => {
    for (const user of users) await fundWallet(trx, user.id, 'XOF', 1_000_000_000_000n);
  });
  for (const user of users) await sessions.open({ id: user.id, is_admin: false });
}

export interface TransferCreateScript {
  /** The pgbench script file. */
  script: string;
  /** Drops the parties table and the script. */
  remove(): Promise<void>;
}

/**
 * A pgbench script that calls `transfer_create` as POST /transfers does (same function, a fresh
 * key per call), between the users that have a session in `knex`'s database: each call draws
 * a sender and a different recipient among them. Needs at least two such users.
 */
export async function transferCreateScript(
  knex: Knex,
  batchSize = 0,
  options: { functionName?: string; withSession?: boolean } = {},
): Promise<TransferCreateScript> {
  const functionName = options.functionName ?? 'transfer_create';
  const session = options.withSession === false ? 'NULL::uuid' : 'f.session_id';
  await knex.raw(`DROP TABLE IF EXISTS bench_parties`);
  await knex.raw(`CREATE TABLE bench_parties AS
    SELECT row_number() OVER (ORDER BY s.user_id)::int AS i, s.id AS session_id, s.user_id, u.email
      FROM sessions s JOIN users u ON u.id = s.user_id`);
  const parties = Number((await knex('bench_parties').count<Array<{ n: string }>>({ n: '*' }))[0]?.n);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgbench-transfer-create-'));
  const script = path.join(dir, 'transfer.sql');
  // batchSize > 0: one transfer_create_batch call of that many transfers (group commit, issue 21).
  fs.writeFileSync(
    script,
    batchSize > 0
      ? `\\set i random(1, ${parties})
SELECT count(*) FROM transfer_create_batch((
  SELECT jsonb_agg(jsonb_build_object('session_id', f.session_id, 'user_id', f.user_id, 'operation', '${CREATE_TRANSFER_OPERATION}',
    'key', gen_random_uuid()::text, 'request_hash', encode(sha256(random()::text::bytea), 'hex'), 'lease_seconds', 60, 'ttl_hours', 24,
    'currency', 'XOF', 'amount', (1 + g % 100)::text, 'note', NULL, 'identifier_kind', 'email', 'identifier', r.email, 'rail', NULL, 'phone_valid', true) ORDER BY g)
    FROM generate_series(0, ${batchSize - 1}) g
    JOIN bench_parties f ON f.i = 1 + (:i + g * 7) % ${parties}
    JOIN bench_parties r ON r.i = 1 + (f.i + g % ${parties - 1}) % ${parties}));
`
      : `\\set i random(1, ${parties})
\\set j 1 + (:i + random(0, ${parties - 2})) % ${parties}
SELECT t.id FROM bench_parties f, bench_parties r,
  LATERAL ${functionName}(${session}, f.user_id, '${CREATE_TRANSFER_OPERATION}', gen_random_uuid()::text, encode(sha256(random()::text::bytea), 'hex'),
    60, 24, 'XOF', 1 + :i % 100, NULL, 'email', r.email, NULL, true) t
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
