import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import autocannon from 'autocannon';

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
  stop(): Promise<void>;
}

function hasTaskset(): boolean {
  return fs.existsSync('/usr/bin/taskset');
}

/** Starts a TypeScript server script with tsx on core 0; it must print `LISTENING <port>`. */
export async function startServerProcess(script: string, env: Record<string, string> = {}): Promise<ServerProcess> {
  const port = await freePort();
  const tsx = 'node_modules/.bin/tsx';
  const [command, args] = hasTaskset() ? ['taskset', ['-c', '0', tsx, script]] : [tsx, [script]];
  const child = spawn(command, args, {
    env: { ...process.env, ...env, PORT: String(port), NODE_ENV: env.NODE_ENV ?? 'production' },
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
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 15_000).unref();
      }),
  };
}

export function printResult(name: string, result: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ bench: name, ...result }, null, 2)}\n`);
}
