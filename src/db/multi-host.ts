/**
 * Connection strings naming several hosts, in libpq's form
 * (`postgres://user@h1:5432,h2:5433/db?target_session_attrs=read-write`), and the choice of
 * the host a new connection goes to. node-postgres reads one host only, so the pool's
 * connection factory (database.ts) asks a HostSelector for each new connection: it tries the
 * hosts in order, starting with the one that last answered as wanted, and keeps the first that
 * accepts the session attributes asked for (by default `any`, as libpq). A failover error seen
 * on any connection makes the selector forget that host and start a new generation: every
 * pooled connection of an older generation is dropped when next acquired.
 */

export type TargetSessionAttrs = 'any' | 'read-write' | 'primary' | 'read-only' | 'standby';
const TARGET_SESSION_ATTRS: readonly TargetSessionAttrs[] = ['any', 'read-write', 'primary', 'read-only', 'standby'];

export interface HostAddress {
  host: string;
  port: number;
}

export interface DatabaseAddress {
  hosts: HostAddress[];
  targetSessionAttrs: TargetSessionAttrs;
  /** Seconds to wait for one host to accept a connection (libpq's `connect_timeout`). */
  connectTimeoutSeconds: number | undefined;
  /** The connection string of one host: the same user, database and other parameters. */
  urlFor(host: HostAddress): string;
}

export class DatabaseUrlError extends Error {
  override name = 'DatabaseUrlError';
}

const URL_SHAPE = /^(postgres(?:ql)?:)\/\/(?:([^@/?#]*)@)?([^/?#]*)(\/[^?#]*)?(?:\?([^#]*))?$/;

function parseHost(part: string, whole: string): HostAddress {
  const bracketed = /^\[([0-9a-fA-F:.]+)\](?::(\d+))?$/.exec(part);
  const plain = /^([^:[\]]+)(?::(\d+))?$/.exec(part);
  const match = bracketed ?? plain;
  if (!match || match[1] === undefined) throw new DatabaseUrlError(`the host "${part}" of ${redact(whole)} is not host or host:port`);
  const port = match[2] === undefined ? 5432 : Number(match[2]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new DatabaseUrlError(`the port of "${part}" in ${redact(whole)} is not between 1 and 65535`);
  return { host: bracketed ? `[${match[1]}]` : match[1], port };
}

/** The URL with its password hidden, for error messages. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}

/**
 * Reads a PostgreSQL URL with one or several comma-separated hosts. `target_session_attrs`
 * and `connect_timeout` are read here and left out of each host's own URL.
 */
export function parseDatabaseUrl(url: string): DatabaseAddress {
  const match = URL_SHAPE.exec(url);
  if (!match) throw new DatabaseUrlError(`${redact(url)} is not a postgres:// URL`);
  const [, protocol, userinfo, hostList, path, query] = match as unknown as [string, string, string | undefined, string, string | undefined, string | undefined];
  if (hostList === '') throw new DatabaseUrlError(`${redact(url)} names no host`);
  const hosts = hostList.split(',').map((part) => parseHost(part, url));
  const params = new URLSearchParams(query ?? '');
  const attrs = params.get('target_session_attrs') ?? 'any';
  if (!(TARGET_SESSION_ATTRS as readonly string[]).includes(attrs)) {
    throw new DatabaseUrlError(`target_session_attrs must be one of ${TARGET_SESSION_ATTRS.join(', ')}, got "${attrs}"`);
  }
  const timeout = params.get('connect_timeout');
  if (timeout !== null && !/^\d{1,4}$/.test(timeout)) throw new DatabaseUrlError(`connect_timeout must be a whole number of seconds, got "${timeout}"`);
  params.delete('target_session_attrs');
  params.delete('connect_timeout');
  const rest = params.toString();
  const urlFor = (host: HostAddress): string => `${protocol}//${userinfo === undefined ? '' : `${userinfo}@`}${host.host}:${host.port}${path ?? ''}${rest ? `?${rest}` : ''}`;
  for (const host of hosts) {
    try {
      new URL(urlFor(host));
    } catch {
      throw new DatabaseUrlError(`${redact(url)} is not a valid URL for host ${host.host}:${host.port}`);
    }
  }
  return { hosts, targetSessionAttrs: attrs as TargetSessionAttrs, connectTimeoutSeconds: timeout === null ? undefined : Number(timeout), urlFor };
}

/** True when the URL needs the selector: several hosts, or session attributes to check. */
export function needsHostSelection(address: DatabaseAddress): boolean {
  return address.hosts.length > 1 || address.targetSessionAttrs !== 'any';
}

/** What a session says of itself, asked once per new connection when attributes are wanted. */
export interface SessionState {
  inRecovery: boolean;
  readOnly: boolean;
}

export const SESSION_STATE_SQL = "SELECT pg_is_in_recovery() AS in_recovery, current_setting('transaction_read_only') = 'on' AS read_only";

/** libpq's rules: read-write needs a session that accepts writes, primary a server not in recovery. */
export function acceptsSession(attrs: TargetSessionAttrs, state: SessionState): boolean {
  switch (attrs) {
    case 'any':
      return true;
    case 'read-write':
      return !state.readOnly;
    case 'primary':
      return !state.inRecovery;
    case 'read-only':
      return state.readOnly;
    case 'standby':
      return state.inRecovery;
  }
}

/** No host accepted a connection with the wanted attributes: SQLSTATE 08001, a connection failure (503). */
export class NoSuitableHostError extends Error {
  override name = 'NoSuitableHostError';
  readonly code = '08001';
  constructor(readonly attempts: string[]) {
    super(`no database host accepted a connection: ${attempts.join('; ')}`);
  }
}

export interface OpenedSession<Connection> {
  connection: Connection;
  /** Undefined when the attributes are `any` (nothing is asked). */
  state?: SessionState;
}

export interface HostSelectorOptions<Connection> {
  address: DatabaseAddress;
  /** Opens a connection to one host (its URL), or throws. */
  open(url: string, host: HostAddress): Promise<Connection>;
  /** Asks an open connection what it is. */
  inspect(connection: Connection): Promise<SessionState>;
  /** Closes a connection that was not kept. */
  close(connection: Connection): Promise<void>;
  /** Told once per failover seen (the host that was current, the error). */
  onFailover?(host: HostAddress | undefined, error: unknown): void;
}

export class HostSelector<Connection> {
  /** Bumped on every failover: connections of an older generation are not reused. */
  generation = 0;
  /** The index of the host the last new connection went to, or undefined to start from the first. */
  private current: number | undefined;

  constructor(private readonly options: HostSelectorOptions<Connection>) {}

  get currentHost(): HostAddress | undefined {
    return this.current === undefined ? undefined : this.options.address.hosts[this.current];
  }

  /** The hosts in the order to try: the current one first, then the others in the URL's order. */
  private order(): number[] {
    const all = this.options.address.hosts.map((_host, index) => index);
    return this.current === undefined ? all : [this.current, ...all.filter((index) => index !== this.current)];
  }

  /** A new connection to the first host that accepts the wanted session, or NoSuitableHostError. */
  async connect(): Promise<{ connection: Connection; generation: number; host: HostAddress }> {
    const { address } = this.options;
    const attempts: string[] = [];
    const generation = this.generation;
    for (const index of this.order()) {
      const host = address.hosts[index] as HostAddress;
      let connection: Connection;
      try {
        connection = await this.options.open(address.urlFor(host), host);
      } catch (error) {
        attempts.push(`${host.host}:${host.port} ${describe(error)}`);
        continue;
      }
      if (address.targetSessionAttrs !== 'any') {
        let state: SessionState;
        try {
          state = await this.options.inspect(connection);
        } catch (error) {
          attempts.push(`${host.host}:${host.port} ${describe(error)}`);
          await this.options.close(connection).catch(() => undefined);
          continue;
        }
        if (!acceptsSession(address.targetSessionAttrs, state)) {
          attempts.push(`${host.host}:${host.port} is ${state.readOnly ? 'read-only' : 'read-write'}${state.inRecovery ? ' (in recovery)' : ''}, not ${address.targetSessionAttrs}`);
          await this.options.close(connection).catch(() => undefined);
          continue;
        }
      }
      // A failover noticed while this connection was being made: it may be to the old primary.
      if (generation !== this.generation && address.targetSessionAttrs !== 'any') {
        await this.options.close(connection).catch(() => undefined);
        return this.connect();
      }
      this.current = index;
      return { connection, generation, host };
    }
    this.current = undefined;
    throw new NoSuitableHostError(attempts);
  }

  /**
   * A failover error on a connection of `generation`: the next connection searches the hosts
   * again from the first, and every pooled connection made before is dropped. Errors from
   * connections of an older generation are the same failover, already counted.
   */
  failover(generation: number, error: unknown): void {
    if (generation !== this.generation) return;
    const host = this.currentHost;
    this.generation += 1;
    this.current = undefined;
    this.options.onFailover?.(host, error);
  }

  /** False for a connection made before the latest failover. */
  isCurrent(generation: number): boolean {
    return generation === this.generation;
  }
}

function describe(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const message = typeof e?.message === 'string' ? e.message : String(error);
  return code && !message.includes(code) ? `${code} ${message}` : message;
}
