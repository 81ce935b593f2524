import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '../..');
const started: ChildProcess[] = [];
const serverPids: number[] = [];

afterAll(() => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const pid of serverPids) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
});

/** Field 3 (state) and 5 (process group) of /proc/<pid>/stat; undefined once reaped. */
function procStat(pid: number): { state: string; pgrp: number } | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0] as string, pgrp: Number(fields[2]) };
  } catch {
    return undefined;
  }
}

/** Alive and not a zombie waiting to be reaped. */
function isRunning(pid: number): boolean {
  const stat = procStat(pid);
  return stat !== undefined && stat.state !== 'Z' && stat.state !== 'X';
}

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return condition();
}

/** Runs a TypeScript entry point in one node process (no tsx CLI wrapper in between). */
function runTs(script: string, env: Record<string, string> = {}): { child: ChildProcess; output: () => string; line: (pattern: RegExp) => Promise<string> } {
  const childEnv: Record<string, string | undefined> = { ...process.env, ...env };
  delete childEnv.DATABASE_URL;
  delete childEnv.REDIS_URL;
  delete childEnv.VITEST;
  const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let output = '';
  const waiters: Array<() => void> = [];
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    for (const waiter of waiters) waiter();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const line = (pattern: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no line matching ${pattern} within 90 s:\n${output}`)), 90_000);
      const check = () => {
        const found = output.split('\n').find((l) => pattern.test(l));
        if (found) {
          clearTimeout(timer);
          resolve(found);
        }
      };
      waiters.push(check);
      check();
    });
  return { child, output: () => output, line };
}

describe('embedded PostgreSQL process', () => {
  it('runs in its own process group and stops when its parent is killed with SIGKILL', async () => {
    const parent = runTs('test/support/embedded-parent.ts');
    const ready = await parent.line(/^READY \d+ /);
    const serverPid = Number(ready.split(' ')[1]);
    serverPids.push(serverPid);
    expect(isRunning(serverPid)).toBe(true);
    expect(procStat(serverPid)?.pgrp).toBe(serverPid); // leads its own group
    expect(procStat(serverPid)?.pgrp).not.toBe(procStat(parent.child.pid as number)?.pgrp);

    parent.child.kill('SIGKILL');
    expect(await waitUntil(() => !isRunning(serverPid), 15_000)).toBe(true);
  });

  it('is stopped before the API exits when start-up fails after it was launched (port taken)', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const takenPort = (blocker.address() as net.AddressInfo).port;
    try {
      const api = runTs('src/main.ts', { PORT: String(takenPort), PAY_PORT: '0', EMBEDDED_DATA_DIR: 'memory://', SEED_DEMO: 'false', LOG_LEVEL: 'info' });
      const exited = new Promise<number | null>((resolve) => api.child.once('exit', (code) => resolve(code)));
      const ready = JSON.parse(await api.line(/"database ready"/)) as { embeddedPid: number };
      serverPids.push(ready.embeddedPid);
      const code = await exited;
      // Checked the moment the API is gone: the server was stopped (and reaped) by the API
      // itself, not left to notice later that its parent died.
      const runningAtExit = isRunning(ready.embeddedPid);
      const seenAtExit = procStat(ready.embeddedPid) !== undefined;
      expect(code).toBe(1);
      expect(api.output()).toContain('start-up failed; closing what was opened');
      expect(api.output()).toMatch(/EADDRINUSE/);
      // The API closed it itself (the watchdog, which stops the server once its parent is
      // gone, would otherwise hide a missing close).
      expect(api.output()).toContain('start-up failed; the database is closed');
      expect(runningAtExit).toBe(false);
      expect(seenAtExit).toBe(false);
    } finally {
      blocker.close();
    }
  });

  // A SIGTERM that comes after "listening" but while the job queue is still starting must not
  // meet Node's default (handlers installed only once start-up is over): the process would die
  // with no clean stop, its embedded database left to the watchdog.
  it('stops cleanly on a SIGTERM that comes during start-up (after "listening", the job queue still starting)', async () => {
    const api = runTs('src/main.ts', { PORT: '0', PAY_PORT: '0', EMBEDDED_DATA_DIR: 'memory://', SEED_DEMO: 'false', LOG_LEVEL: 'info', METRICS_PORT: '0' });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => api.child.once('exit', (code, signal) => resolve({ code, signal })));
    const ready = JSON.parse(await api.line(/"database ready"/)) as { embeddedPid: number };
    serverPids.push(ready.embeddedPid);
    await api.line(/"msg":"listening"/);
    api.child.kill('SIGTERM');
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(api.output()).toContain('"msg":"stopped"');
    expect(isRunning(ready.embeddedPid)).toBe(false);
  });

  // The server must not inherit the secrets of the API's environment, nor listen on a TCP
  // port probed, released and bound again (another local process could take it first and be
  // talked to as the database).
  it('sees only the environment Node needs (no secret of the API) and listens on a private Unix socket, not a TCP port', async () => {
    const parent = runTs('test/support/embedded-parent.ts', {
      JWT_SECRET: 'jwt-secret-that-must-stay-in-the-api-0123456789',
      PAY_SECRET: 'pay-secret-that-must-stay-in-the-api-0123456789',
      SOME_TOKEN: 'token-that-must-stay-in-the-api',
    });
    const ready = await parent.line(/^READY \d+ /);
    const [, pid, url] = ready.split(' ');
    const serverPid = Number(pid);
    serverPids.push(serverPid);
    try {
      const environ = fs.readFileSync(`/proc/${serverPid}/environ`, 'utf8').split('\0').filter(Boolean);
      const names = environ.map((entry) => entry.slice(0, entry.indexOf('=')));
      for (const secret of ['JWT_SECRET', 'PAY_SECRET', 'SOME_TOKEN', 'DATABASE_URL', 'REDIS_URL', 'NODE_ENV']) expect(names).not.toContain(secret);
      expect(environ.join('\n')).not.toContain('must-stay-in-the-api');
      expect(names).toContain('EMBEDDED_POSTGRES_PARENT_PID');
      expect(names.every((name) => ['PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_ALL', 'TZ', 'EMBEDDED_POSTGRES_PARENT_PID'].includes(name))).toBe(true);

      // No TCP port at all: the address is a socket in a directory only this user can enter.
      const parsed = new URL(url as string);
      expect(parsed.port).toBe('');
      const socketDir = parsed.searchParams.get('host') as string;
      expect(path.isAbsolute(socketDir)).toBe(true);
      const stat = fs.statSync(socketDir);
      expect(stat.mode & 0o777).toBe(0o700);
      expect(fs.statSync(path.join(socketDir, '.s.PGSQL.5432')).isSocket()).toBe(true);
      const tcp = fs.readFileSync('/proc/net/tcp', 'utf8') + fs.readFileSync('/proc/net/tcp6', 'utf8');
      const inodes = fs.readdirSync(`/proc/${serverPid}/fd`).map((fd) => {
        try {
          return fs.readlinkSync(`/proc/${serverPid}/fd/${fd}`);
        } catch {
          return '';
        }
      }).filter((link) => link.startsWith('socket:[')).map((link) => link.slice(8, -1));
      // No listening TCP socket (state 0A) belongs to the server.
      const listening = tcp.split('\n').filter((line) => line.trim().split(/\s+/)[3] === '0A').map((line) => line.trim().split(/\s+/)[9]);
      expect(inodes.filter((inode) => listening.includes(inode))).toEqual([]);
    } finally {
      parent.child.kill('SIGKILL');
      await waitUntil(() => !isRunning(serverPid), 15_000);
    }
  });
});
