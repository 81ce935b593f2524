import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config';
import { HostSelector, NoSuitableHostError, acceptsSession, needsHostSelection, parseDatabaseUrl, type HostAddress, type SessionState } from '../../src/db/multi-host';
import { isConnectionLoss } from '../../src/db/transaction';

describe('multi-host DATABASE_URL (libpq form)', () => {
  it('reads every host with its port (5432 when none), and gives each host a URL of its own without the selection parameters', () => {
    const address = parseDatabaseUrl('postgres://app:s3cret@db1.example,db2.example:5433,[::1]:5434/ledger?target_session_attrs=read-write&connect_timeout=3&sslmode=require');
    expect(address.hosts).toEqual([
      { host: 'db1.example', port: 5432 },
      { host: 'db2.example', port: 5433 },
      { host: '[::1]', port: 5434 },
    ]);
    expect(address.targetSessionAttrs).toBe('read-write');
    expect(address.connectTimeoutSeconds).toBe(3);
    expect(address.urlFor(address.hosts[1] as HostAddress)).toBe('postgres://app:s3cret@db2.example:5433/ledger?sslmode=require');
    expect(needsHostSelection(address)).toBe(true);
  });

  it('a single host without target_session_attrs needs no selection (the stock connection path)', () => {
    const address = parseDatabaseUrl('postgresql://postgres@127.0.0.1:5432/postgres');
    expect(address.targetSessionAttrs).toBe('any');
    expect(needsHostSelection(address)).toBe(false);
    expect(needsHostSelection(parseDatabaseUrl('postgres://postgres@127.0.0.1/postgres?target_session_attrs=primary'))).toBe(true);
  });

  it.each([
    ['postgres://a@h1,h2:99999/db', /port/],
    ['postgres://a@h1,/db', /host/],
    ['postgres://a@h1,h2/db?target_session_attrs=prefer-nothing', /target_session_attrs must be one of/],
    ['postgres://a@h1,h2/db?connect_timeout=soon', /connect_timeout/],
  ])('refuses %s', (url, message) => {
    expect(() => parseDatabaseUrl(url)).toThrow(message);
  });

  it('the configuration accepts a multi-host DATABASE_URL and names the key of a bad one, with its password hidden', () => {
    const url = 'postgres://app:pw@10.0.0.1:5432,10.0.0.2:5432/app?target_session_attrs=read-write';
    expect(loadConfig({ NODE_ENV: 'test', DATABASE_URL: url }).databaseUrl).toBe(url);
    expect(() => loadConfig({ NODE_ENV: 'test', DATABASE_URL: 'postgres://app:pw@h1,h2:0/app' })).toThrow(/^DATABASE_URL: .*app:\*\*\*@/);
  });

  it('read-write wants a session that accepts writes, primary a server not in recovery (as libpq)', () => {
    const primary: SessionState = { inRecovery: false, readOnly: false };
    const standby: SessionState = { inRecovery: true, readOnly: true };
    const readOnlyPrimary: SessionState = { inRecovery: false, readOnly: true };
    expect([primary, standby, readOnlyPrimary].map((s) => acceptsSession('read-write', s))).toEqual([true, false, false]);
    expect([primary, standby, readOnlyPrimary].map((s) => acceptsSession('primary', s))).toEqual([true, false, true]);
    expect([primary, standby, readOnlyPrimary].map((s) => acceptsSession('standby', s))).toEqual([false, true, false]);
    expect([primary, standby, readOnlyPrimary].map((s) => acceptsSession('any', s))).toEqual([true, true, true]);
  });
});

/** Hosts whose behaviour a test sets: down (refused), read-only (a standby) or primary. */
function fakeCluster(url: string, roles: Record<number, 'down' | 'standby' | 'primary'>) {
  const opened: number[] = [];
  const closed: number[] = [];
  const failovers: Array<number | undefined> = [];
  const selector = new HostSelector<{ port: number }>({
    address: parseDatabaseUrl(url),
    async open(_url, host) {
      opened.push(host.port);
      if (roles[host.port] === 'down') throw Object.assign(new Error(`connect ECONNREFUSED 127.0.0.1:${host.port}`), { code: 'ECONNREFUSED' });
      return { port: host.port };
    },
    async inspect(connection) {
      const standby = roles[connection.port] === 'standby';
      return { inRecovery: standby, readOnly: standby };
    },
    async close(connection) {
      closed.push(connection.port);
    },
    onFailover: (host) => failovers.push(host?.port),
  });
  return { selector, opened, closed, failovers };
}

describe('host selection for new connections', () => {
  const url = 'postgres://app@127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003/app?target_session_attrs=read-write';

  it('skips a read-only first host and closes the connection it opened to it', async () => {
    const { selector, opened, closed } = fakeCluster(url, { 7001: 'standby', 7002: 'primary', 7003: 'standby' });
    expect((await selector.connect()).host.port).toBe(7002);
    expect(opened).toEqual([7001, 7002]);
    expect(closed).toEqual([7001]);
  });

  it('skips a refused host and tries the next ones in order', async () => {
    const { selector, opened } = fakeCluster(url, { 7001: 'down', 7002: 'standby', 7003: 'primary' });
    expect((await selector.connect()).host.port).toBe(7003);
    expect(opened).toEqual([7001, 7002, 7003]);
  });

  it('goes to the host that last answered first, without asking the others again', async () => {
    const { selector, opened } = fakeCluster(url, { 7001: 'standby', 7002: 'primary', 7003: 'standby' });
    await selector.connect();
    opened.length = 0;
    await selector.connect();
    expect(opened).toEqual([7002]);
  });

  it('all hosts down: a connection failure (08001, a 503), then a host back is found', async () => {
    const roles: Record<number, 'down' | 'standby' | 'primary'> = { 7001: 'down', 7002: 'down', 7003: 'standby' };
    const { selector } = fakeCluster(url, roles);
    const refused = await selector.connect().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(NoSuitableHostError);
    expect((refused as NoSuitableHostError).code).toBe('08001');
    expect((refused as Error).message).toMatch(/7001 connect ECONNREFUSED.*7003 is read-only/);
    expect(isConnectionLoss(refused)).toBe(true);
    roles[7002] = 'primary';
    expect((await selector.connect()).host.port).toBe(7002);
  });

  it('a failover starts a new generation and searches from the first host again; a late error of an old connection changes nothing', async () => {
    const roles: Record<number, 'down' | 'standby' | 'primary'> = { 7001: 'primary', 7002: 'standby', 7003: 'standby' };
    const { selector, opened, failovers } = fakeCluster(url, roles);
    const before = await selector.connect();
    expect(selector.isCurrent(before.generation)).toBe(true);
    roles[7001] = 'standby';
    roles[7002] = 'primary';
    selector.failover(before.generation, new Error('terminating connection due to administrator command'));
    selector.failover(before.generation, new Error('the same failover, seen on another connection of the pool'));
    expect(failovers).toEqual([7001]);
    expect(selector.isCurrent(before.generation)).toBe(false);
    opened.length = 0;
    const after = await selector.connect();
    expect(after.host.port).toBe(7002);
    expect(opened).toEqual([7001, 7002]);
    expect(selector.isCurrent(after.generation)).toBe(true);
  });

  it('with target_session_attrs=any the first host that connects is kept, and nothing is asked', async () => {
    const { selector, closed } = fakeCluster('postgres://app@127.0.0.1:7001,127.0.0.1:7002/app', { 7001: 'down', 7002: 'standby' });
    expect((await selector.connect()).host.port).toBe(7002);
    expect(closed).toEqual([]);
  });
});
