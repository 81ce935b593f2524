import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * An embedded PostgreSQL (PGlite behind @electric-sql/pglite-socket) in a child process,
 * reached through the ordinary `pg` driver, so a new user needs nothing installed.
 * PGlite is single-connection: callers must use a pool of exactly one connection.
 *
 * It listens on a Unix socket in a fresh directory only this user can enter (mode 0700),
 * not on a TCP port: there is no port to probe, release and bind again, so no other local
 * process can take the address first (and be talked to as the database), nor connect to it.
 */
export interface EmbeddedPostgres {
  url: string;
  /** The server's process id; it leads its own process group. */
  pid: number;
  stop(): Promise<void>;
}

/**
 * Loaded into the server process before its script (`--import`): the server stops (its own
 * SIGTERM handler closes the database cleanly) when its parent goes away, however the parent
 * ended, even by SIGKILL. Two signals: the end of stdin (a pipe whose only writer is the
 * parent; the kernel closes it when the parent dies) and a change of parent pid, checked
 * every second. Should the shutdown hang, it exits after 10 s.
 */
const PARENT_WATCHDOG = `
const parentPid = Number(process.env.EMBEDDED_POSTGRES_PARENT_PID);
let leaving = false;
const leave = () => {
  if (leaving) return;
  leaving = true;
  setTimeout(() => process.exit(1), 10000).unref();
  process.kill(process.pid, 'SIGTERM');
};
process.stdin.on('end', leave);
process.stdin.on('close', leave);
process.stdin.on('error', leave);
process.stdin.resume();
setInterval(() => { if (process.ppid !== parentPid) leave(); }, 1000).unref();
`;

/** Signals the whole process group the server leads (it spawns nothing itself today). */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    child.kill(signal);
  }
}

/**
 * What the server process may see of our environment: enough for Node to run, nothing else.
 * The API's secrets (JWT_SECRET, PAY_SECRET, DATABASE_URL, REDIS_URL, ...) never reach it.
 */
const CHILD_ENVIRONMENT = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_ALL', 'TZ'] as const;

export function embeddedServerEnvironment(env: NodeJS.ProcessEnv, parentPid: number): NodeJS.ProcessEnv {
  const childEnv: NodeJS.ProcessEnv = { EMBEDDED_POSTGRES_PARENT_PID: String(parentPid) };
  for (const key of CHILD_ENVIRONMENT) if (env[key] !== undefined) childEnv[key] = env[key];
  return childEnv;
}

/** A Unix socket in a new directory of mode 0700 (the name PostgreSQL clients expect). */
function privateSocket(): { dir: string; socket: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'embedded-pg-'));
  fs.chmodSync(dir, 0o700);
  return { dir, socket: path.join(dir, '.s.PGSQL.5432') };
}

function serverScript(): string {
  // The package exports only its library entry; the CLI sits beside it.
  const entry = require.resolve('@electric-sql/pglite-socket');
  return path.join(path.dirname(entry), 'scripts', 'server.js');
}

async function waitForSocket(socketPath: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`embedded PostgreSQL exited with code ${child.exitCode}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(socketPath);
      // The server accepts one connection (net.Server maxConnections): wait until this probe
      // is really gone, or the pool's first connection is reset (ECONNRESET at start).
      socket.once('connect', () => {
        socket.once('close', () => setTimeout(() => resolve(true), 250));
        socket.end();
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`embedded PostgreSQL did not listen within ${timeoutMs} ms`);
}

/** `dataDir` is a directory, or `memory://` for a throw-away database. */
export async function startEmbeddedPostgres(dataDir: string): Promise<EmbeddedPostgres> {
  const db = dataDir.startsWith('memory://') ? dataDir : path.resolve(dataDir);
  if (!db.startsWith('memory://')) fs.mkdirSync(path.dirname(db), { recursive: true });
  const { dir: socketDir, socket } = privateSocket();
  const removeSocketDir = () => fs.rmSync(socketDir, { recursive: true, force: true });
  // Its own process group: a Ctrl-C in the terminal reaches only the API, which finishes its
  // requests and closes the pool before it stops the database (see stop()). The watchdog
  // makes sure the server never outlives the API.
  const child = spawn(
    process.execPath,
    [
      '--import',
      `data:text/javascript,${encodeURIComponent(PARENT_WATCHDOG)}`,
      serverScript(),
      `--db=${db}`,
      `--path=${socket}`,
      '--max-connections=1',
    ],
    {
      stdio: ['pipe', 'ignore', 'pipe'],
      detached: true,
      env: embeddedServerEnvironment(process.env, process.pid),
    },
  );
  // Never written to: the pipe only tells the server that this process is alive.
  child.stdin?.on('error', () => undefined);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  try {
    await waitForSocket(socket, child, 60_000);
  } catch (error) {
    signalGroup(child, 'SIGKILL');
    removeSocketDir();
    throw new Error(`${(error as Error).message}${stderr ? `: ${stderr.trim()}` : ''}`);
  }
  return {
    // `host` in the query names the socket's directory (it overrides the URL's host for pg).
    url: `postgres://postgres:postgres@localhost/postgres?host=${encodeURIComponent(socketDir)}`,
    pid: child.pid as number,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) {
          removeSocketDir();
          return resolve();
        }
        const killer = setTimeout(() => signalGroup(child, 'SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(killer);
          removeSocketDir();
          resolve();
        });
        signalGroup(child, 'SIGTERM');
      }),
  };
}
