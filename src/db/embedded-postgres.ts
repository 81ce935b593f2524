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
  stop(): Promise<void>;
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
  const child = spawn(process.execPath, [serverScript(), `--db=${db}`, `--port=${port}`, '--host=127.0.0.1', '--max-connections=1'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  try {
    await waitForPort(port, child, 60_000);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`${(error as Error).message}${stderr ? `: ${stderr.trim()}` : ''}`);
  }
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(killer);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}
