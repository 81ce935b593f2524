import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/**
 * An embedded PostgreSQL (PGlite behind @electric-sql/pglite-socket) in a child process,
 * reached through the ordinary `pg` driver, so a new user needs nothing installed.
 * PGlite is single-connection: callers must use a pool of exactly one connection.
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

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function serverScript(): string {
  // The package exports only its library entry; the CLI sits beside it.
  const entry = require.resolve('@electric-sql/pglite-socket');
  return path.join(path.dirname(entry), 'scripts', 'server.js');
}

async function waitForPort(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`embedded PostgreSQL exited with code ${child.exitCode}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
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
  const port = await freePort();
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
      `--port=${port}`,
      '--host=127.0.0.1',
      '--max-connections=1',
    ],
    {
      stdio: ['pipe', 'ignore', 'pipe'],
      detached: true,
      env: { ...process.env, EMBEDDED_POSTGRES_PARENT_PID: String(process.pid) },
    },
  );
  // Never written to: the pipe only tells the server that this process is alive.
  child.stdin?.on('error', () => undefined);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  try {
    await waitForPort(port, child, 60_000);
  } catch (error) {
    signalGroup(child, 'SIGKILL');
    throw new Error(`${(error as Error).message}${stderr ? `: ${stderr.trim()}` : ''}`);
  }
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    pid: child.pid as number,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const killer = setTimeout(() => signalGroup(child, 'SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(killer);
          resolve();
        });
        signalGroup(child, 'SIGTERM');
      }),
  };
}
