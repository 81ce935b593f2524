import fs from 'node:fs';
import inspector from 'node:inspector';
import type { Knex } from 'knex';

/**
 * CPU spent by a stretch of a test run, for load tests on a shared machine (wall time there
 * says more about the neighbours than about the code): this process's user+system time (the
 * test and the in-process app server) and, on PostgreSQL, the time of this database's server
 * backends of this process's pool, read from /proc (0 when the server is not a local process
 * this user may read; backends are looked at every second, so the last second of one the pool
 * closed is missed: a lower bound).
 * With a `profileFile` the process is also profiled between start() and stop() (a V8 CPU
 * profile, for Chrome DevTools or speedscope).
 */
export interface CpuReport {
  processMs: number;
  databaseMs: number;
  wallMs: number;
}

const TICK_MS = 10; // USER_HZ is 100 on Linux

function backendTicks(pids: number[]): Map<number, number> {
  const ticks = new Map<number, number>();
  for (const pid of pids) {
    try {
      // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks.set(pid, Number(fields[11]) + Number(fields[12]));
    } catch {
      // not a local process, or gone
    }
  }
  return ticks;
}

export async function startCpuMeter(knex: Knex, kind: 'postgres' | 'embedded', profileFile?: string | false): Promise<{ stop(): Promise<CpuReport> }> {
  // This process's backends (another worker may use the same database at the same time):
  // the server process ids of the pool's connections, as the server told each client.
  const backends = (): number[] => {
    if (kind !== 'postgres') return [];
    const pool = (knex.client as { pool?: { free: Array<{ resource: unknown }>; used: Array<{ resource: unknown }> } }).pool;
    return [...(pool?.free ?? []), ...(pool?.used ?? [])].map((entry) => Number((entry.resource as { processID?: number }).processID)).filter((pid) => pid > 0);
  };
  // Each backend's time when first seen (0 for one that starts later) and when last seen; the
  // pool opens and closes connections as it goes, so they are looked at every second.
  const first = backendTicks(backends());
  const last = new Map(first);
  const look = () => {
    for (const [pid, ticks] of backendTicks(backends())) {
      if (!first.has(pid)) first.set(pid, 0);
      last.set(pid, ticks);
    }
  };
  const looking = setInterval(look, 1000);
  looking.unref();
  let session: inspector.Session | undefined;
  if (profileFile) {
    session = new inspector.Session();
    session.connect();
    const post = (method: string, params?: object) => new Promise<unknown>((resolve, reject) => session!.post(method, params ?? {}, (err, result) => (err ? reject(err) : resolve(result))));
    await post('Profiler.enable');
    await post('Profiler.setSamplingInterval', { interval: 1000 });
    await post('Profiler.start');
  }
  const cpu = process.cpuUsage();
  const wall = performance.now();
  return {
    async stop() {
      const used = process.cpuUsage(cpu);
      const wallMs = performance.now() - wall;
      if (session && profileFile) {
        const result = await new Promise<{ profile: unknown }>((resolve, reject) => session!.post('Profiler.stop', (err, out) => (err ? reject(err) : resolve(out as { profile: unknown }))));
        fs.writeFileSync(profileFile, JSON.stringify(result.profile));
        session.disconnect();
      }
      clearInterval(looking);
      look();
      let databaseTicks = 0;
      for (const [pid, ticks] of last) databaseTicks += ticks - (first.get(pid) ?? 0);
      return { processMs: (used.user + used.system) / 1000, databaseMs: databaseTicks * TICK_MS, wallMs };
    },
  };
}
