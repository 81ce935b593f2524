import type { Knex } from 'knex';
import { describe, expect, it } from 'vitest';
import {
  chooseReadTarget,
  MemoryRecentWrites,
  readConnection,
  ReadRouting,
  RedisRecentWrites,
  StandbyMonitor,
  writerKeys,
  type RecentWritesRedis,
  type StandbyState,
} from '../../src/db/read-routing';
import { readsMayLag } from '../../src/http/mount-operations';

const NOW = 1_000_000;
const current: StandbyState = { reachable: true, lagMs: 200, checkedAt: NOW - 500 };
const decide = (over: Partial<Parameters<typeof chooseReadTarget>[0]>) =>
  chooseReadTarget({ recentWrite: false, standby: current, maxLagMs: 1_000, staleAfterMs: 5_000, now: NOW, ...over });

describe('the routing decision of a list or statement read', () => {
  it('sends a caller with no recent write to a reachable standby within the lag bound', () => {
    expect(decide({})).toEqual({ target: 'standby', reason: 'standby-current' });
    expect(decide({ standby: { ...current, lagMs: 1_000 } }).target).toBe('standby');
  });

  it('sends a caller that wrote within the window to the primary, however current the standby', () => {
    expect(decide({ recentWrite: true, standby: { ...current, lagMs: 0 } })).toEqual({ target: 'primary', reason: 'recent-write' });
  });

  it('sends reads to the primary while the standby lags past the bound, or its lag is unknown', () => {
    expect(decide({ standby: { ...current, lagMs: 1_001 } })).toEqual({ target: 'primary', reason: 'standby-lagging' });
    expect(decide({ standby: { ...current, lagMs: Infinity } }).reason).toBe('standby-lagging');
    expect(decide({ standby: { ...current, lagMs: Number.NaN } }).reason).toBe('standby-lagging');
  });

  it('sends reads to the primary when the standby is unreachable', () => {
    expect(decide({ standby: { ...current, reachable: false, lagMs: 0 } })).toEqual({ target: 'primary', reason: 'standby-unreachable' });
  });

  it('sends reads to the primary before the first check and when the checks stopped', () => {
    expect(decide({ standby: undefined }).reason).toBe('standby-unchecked');
    expect(decide({ standby: { ...current, checkedAt: NOW - 5_001 } }).reason).toBe('standby-unchecked');
  });
});

describe('the standby lag checks', () => {
  const monitor = (measure: () => Promise<number | null>, changes: boolean[] = []) =>
    new StandbyMonitor({ measure, intervalMs: 1_000, timeoutMs: 50, maxLagMs: 500, clock: () => NOW, onChange: (usable) => changes.push(usable) });

  it('records the measured lag, and an unknown lag as infinite', async () => {
    const changes: boolean[] = [];
    let lag: number | null = 120;
    const checks = monitor(async () => lag, changes);
    await checks.check();
    expect(checks.current).toEqual({ reachable: true, lagMs: 120, checkedAt: NOW });
    lag = 900;
    await checks.check();
    expect(checks.current?.lagMs).toBe(900);
    lag = null;
    await checks.check();
    expect(checks.current?.lagMs).toBe(Infinity);
    expect(changes).toEqual([true, false]);
  });

  it('marks the standby unreachable when the check fails or does not answer in time', async () => {
    const failing = monitor(async () => {
      throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    });
    await failing.check();
    expect(failing.current).toMatchObject({ reachable: false });
    const hanging = monitor(() => new Promise<number>(() => undefined));
    await hanging.check();
    expect(hanging.current).toMatchObject({ reachable: false, lagMs: Infinity });
  });
});

describe('the read-after-write marks', () => {
  it('remember a write for the window, per user and per organisation', async () => {
    let now = NOW;
    const marks = new MemoryRecentWrites(5_000, () => now);
    await marks.mark(writerKeys({ userId: 'u1', organizationId: 'o1' }));
    expect(await marks.wroteRecently(writerKeys({ userId: 'u1' }))).toBe(true);
    expect(await marks.wroteRecently(writerKeys({ userId: 'u2', organizationId: 'o1' }))).toBe(true);
    expect(await marks.wroteRecently(writerKeys({ userId: 'u2', organizationId: 'o2' }))).toBe(false);
    now += 4_999;
    expect(await marks.wroteRecently(['user:u1'])).toBe(true);
    now += 1;
    expect(await marks.wroteRecently(['user:u1'])).toBe(false);
  });

  it('in Redis, expire with the window; a caller that cannot be checked reads from the primary', async () => {
    const stored = new Map<string, number>();
    let failing = false;
    const redis: RecentWritesRedis = {
      async set(key, _value, _mode, ms) {
        if (failing) throw new Error('redis down');
        stored.set(key, ms);
        return 'OK';
      },
      async exists(...keys) {
        if (failing) throw new Error('redis down');
        return keys.filter((key) => stored.has(key)).length;
      },
    };
    const writer = new RedisRecentWrites(redis, 5_000);
    const otherInstance = new RedisRecentWrites(redis, 5_000);
    await writer.mark(['user:u1']);
    expect(stored.get('read-after-write:user:u1')).toBe(5_000);
    expect(await otherInstance.wroteRecently(['user:u1'])).toBe(true);
    expect(await otherInstance.wroteRecently(['user:u2'])).toBe(false);
    failing = true;
    expect(await otherInstance.wroteRecently(['user:u2'])).toBe(true);
    await writer.mark(['user:u3']);
    expect(await writer.wroteRecently(['user:u3'])).toBe(true);
  });
});

describe('the read-connection provider', () => {
  const primary = { name: 'primary' } as unknown as Knex;
  const standby = { name: 'standby' } as unknown as Knex;

  async function routing(state: StandbyState | undefined, wrote: string[] = []) {
    const monitor = new StandbyMonitor({ measure: async () => state?.lagMs ?? null, intervalMs: 1_000, timeoutMs: 50, maxLagMs: 500 });
    if (state) await monitor.check();
    if (state && !state.reachable) monitor.markUnreachable(new Error('down'));
    const marks = new MemoryRecentWrites(5_000);
    await marks.mark(wrote);
    return { monitor, reads: new ReadRouting({ standby, monitor, recentWrites: marks, maxLagMs: 500, staleAfterMs: 5_000 }) };
  }

  it('gives the standby inside a routed read, and the primary outside one', async () => {
    const { reads } = await routing({ reachable: true, lagMs: 10, checkedAt: 0 });
    expect(await reads.run(['user:u1'], async () => readConnection(primary))).toBe(standby);
    expect(readConnection(primary)).toBe(primary);
  });

  it('gives the primary to a recent writer and when the standby lags or is unreachable', async () => {
    expect(await (await routing({ reachable: true, lagMs: 10, checkedAt: 0 }, ['user:u1'])).reads.run(['user:u1'], async () => readConnection(primary))).toBe(primary);
    expect(await (await routing({ reachable: true, lagMs: 501, checkedAt: 0 })).reads.run(['user:u1'], async () => readConnection(primary))).toBe(primary);
    expect(await (await routing({ reachable: false, lagMs: 0, checkedAt: 0 })).reads.run(['user:u1'], async () => readConnection(primary))).toBe(primary);
  });

  it('answers from the primary a read that lost its standby connection, and stops using the standby', async () => {
    const { reads, monitor } = await routing({ reachable: true, lagMs: 10, checkedAt: 0 });
    const used: Knex[] = [];
    const answer = await reads.run(['user:u1'], async () => {
      const db = readConnection(primary);
      used.push(db);
      if (db === standby) throw Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
      return 'answered';
    });
    expect(answer).toBe('answered');
    expect(used).toEqual([standby, primary]);
    expect(monitor.current?.reachable).toBe(false);
  });

  it('never runs a read again once its response has started, nor after an error of the read itself', async () => {
    const { reads } = await routing({ reachable: true, lagMs: 10, checkedAt: 0 });
    const lost = Object.assign(new Error('Connection terminated unexpectedly'), {});
    await expect(reads.run(['user:u1'], async () => Promise.reject(lost), () => false)).rejects.toBe(lost);
    const refused = Object.assign(new Error('duplicate key'), { code: '23505' });
    let calls = 0;
    await expect(
      reads.run(['user:u1'], async () => {
        calls += 1;
        throw refused;
      }),
    ).rejects.toBe(refused);
    expect(calls).toBe(1);
  });
});

describe('the operations whose reads may lag', () => {
  it('are the list reads and the account statement, never a read of one object nor a write', () => {
    for (const id of ['listTransfers', 'listWallets', 'listPayments', 'listInvoices', 'listAccounts', 'getAccountStatement', 'listEvents'] as const) expect(readsMayLag(id)).toBe(true);
    for (const id of ['getTransfer', 'getMe', 'getHealth', 'getIdempotencyKey', 'createTransfer', 'getPayment'] as const) expect(readsMayLag(id)).toBe(false);
  });
});
