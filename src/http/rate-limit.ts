import type { Request, RequestHandler } from 'express';
import { ipKeyGenerator, MemoryStore, rateLimit, type ClientRateLimitInfo, type IncrementResponse, type Options, type Store } from 'express-rate-limit';
import type { Redis } from 'ioredis';
import { RedisStore, type RedisReply } from 'rate-limit-redis';
import type { RateLimitConfig } from '../config';
import { DomainError, RateLimitedError, UnavailableError } from '../errors';
import { loginIdentifierKey } from '../modules/auth';
import { FixedWindowCounter, partitionKey } from './fixed-window-counter';
import { RATE_LIMITED_BY } from './metrics';

/**
 * Where the counters live: Redis when REDIS_URL is set (shared by every instance),
 * process memory otherwise. Each limiter gets its own store and key prefix.
 */
export interface RateLimitBackend {
  kind: 'redis' | 'memory';
  createStore(prefix: string): Store;
}

export function memoryRateLimitBackend(): RateLimitBackend {
  return { kind: 'memory', createStore: () => new MemoryStore() };
}

/** How long after a failure the store waits before loading its scripts again. */
export const SCRIPT_RELOAD_INTERVAL_MS = 1_000;

/**
 * rate-limit-redis loads its Lua scripts once, in `init()`, and keeps the promise: when Redis
 * is unreachable at that moment the rejection is cached and every later call fails, even
 * after Redis is back (the API limiter would fail open and login answer 503 forever). The
 * same happens when a NOSCRIPT reload meets an outage. This wrapper loads the scripts again
 * (at most once per `SCRIPT_RELOAD_INTERVAL_MS`) after any failure, so the limiters recover
 * on their own once the Redis client has reconnected. While Redis is down every call fails
 * fast (no offline queue, see src/http/redis.ts) and each limiter applies its own policy.
 */
export class ReconnectingRedisStore implements Store {
  readonly localKeys = false;
  readonly prefix: string;
  private readonly inner: RedisStore;
  private options: Options | undefined;
  private loading: Promise<void> = Promise.resolve();
  /** When the last script load or command failed; undefined while all is well. */
  private failedAt: number | undefined;

  constructor(redis: Redis, prefix: string) {
    this.prefix = prefix;
    this.inner = new RedisStore({
      prefix,
      sendCommand: (command: string, ...args: string[]) => redis.call(command, ...args) as Promise<RedisReply>,
    });
  }

  /** Not awaited by express-rate-limit: a failure here is retried by the first call. */
  init(options: Options): void {
    this.options = options;
    this.load();
  }

  private load(): void {
    const options = this.options;
    if (!options) return;
    this.failedAt = undefined;
    this.loading = this.inner.init(options).catch((error: unknown) => {
      this.failedAt = Date.now();
      throw error;
    });
    // Callers await it; an outage at start must not become an unhandled rejection.
    this.loading.catch(() => undefined);
  }

  private async run<T>(operation: () => Promise<T>): Promise<T> {
    if (this.failedAt !== undefined && Date.now() - this.failedAt >= SCRIPT_RELOAD_INTERVAL_MS) this.load();
    await this.loading;
    try {
      return await operation();
    } catch (error) {
      this.failedAt ??= Date.now();
      throw error;
    }
  }

  get(key: string): Promise<ClientRateLimitInfo | undefined> {
    return this.run(() => this.inner.get(key));
  }

  increment(key: string): Promise<IncrementResponse> {
    return this.run(() => this.inner.increment(key));
  }

  decrement(key: string): Promise<void> {
    return this.run(() => this.inner.decrement(key));
  }

  resetKey(key: string): Promise<void> {
    return this.run(() => this.inner.resetKey(key));
  }
}

/** `namespace` keeps separate deployments (or test runs) sharing one Redis apart. */
export function redisRateLimitBackend(redis: Redis, namespace = ''): RateLimitBackend {
  return {
    kind: 'redis',
    createStore: (prefix) => new ReconnectingRedisStore(redis, `rl:${namespace}${prefix}:`),
  };
}

const IPV4 = /^(?:::ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/i;

/**
 * IPv4 (also IPv4-mapped IPv6) keys are the address itself; IPv6 addresses are grouped by
 * /56 subnet through ipKeyGenerator (one client owns a whole subnet). The IPv4 fast path
 * skips a full address parse on every request; the result is the same.
 */
/** The client address every limiter keys on: IPv4 as is, IPv6 by its /56 (express-rate-limit's ipKeyGenerator). */
export function clientIp(req: Request): string {
  const ip = req.ip ?? req.socket.remoteAddress ?? 'unknown';
  return IPV4.exec(ip)?.[1] ?? ipKeyGenerator(ip);
}

/** A limiter counted in the backend's store under `name`, answering with the draft-8 RateLimit headers. */
function limiter(backend: RateLimitBackend, name: string, options: Pick<Options, 'windowMs' | 'limit' | 'keyGenerator' | 'passOnStoreError' | 'handler'>): RequestHandler {
  return rateLimit({ ...options, identifier: name, standardHeaders: 'draft-8', legacyHeaders: false, store: backend.createStore(name) });
}

/**
 * The API's 429: the limiter's name for the metrics, and a RateLimitedError for the one error
 * handler to write (its headers are already on the response).
 */
function refuseWithEnvelope(name: string, message: string): Options['handler'] {
  return (_req, res, next) => {
    res.locals[RATE_LIMITED_BY] = name;
    next(new RateLimitedError(message));
  };
}

/** Retry-After of a fail-closed limiter's 503 while its store cannot count. */
const STORE_DOWN_RETRY_AFTER_SECONDS = 30;

/**
 * The general limiter: one bucket per authenticated user (so an integrator's server behind
 * one IP is not throttled by its neighbours), one per API key (RATE_LIMIT_API_KEY), one per
 * IP for anonymous calls.
 * If the store fails (Redis down) it fails open: authentication still guards every route,
 * and a cache outage must not take payments reads down with it.
 */
export function apiRateLimiter(backend: RateLimitBackend, config: RateLimitConfig): RequestHandler {
  return limiter(backend, 'api', {
    windowMs: config.windowMs,
    limit: (req) => (req.auth?.apiKey ? config.apiKeyPerWindow : req.auth ? config.authenticatedPerWindow : config.anonymousPerWindow),
    keyGenerator: (req) => (req.auth?.apiKey ? `key:${req.auth.apiKey.id}` : req.auth ? `user:${req.auth.userId}` : `ip:${clientIp(req)}`),
    passOnStoreError: true,
    handler: refuseWithEnvelope('api', 'Too many requests: wait for the time in Retry-After, then retry.'),
  });
}

/**
 * Login attempts per IP and identifier, then per IP whatever the identifier (one address
 * cannot spread its guesses over many identifiers: each costs a password verification).
 * Fails closed: when the store cannot count, login answers 503 rather than letting unlimited
 * password guesses through.
 */
export function loginRateLimiter(backend: RateLimitBackend, config: RateLimitConfig): RequestHandler {
  const perIp = limiter(backend, 'login-ip', {
    windowMs: config.windowMs,
    limit: config.loginPerIpPerWindow,
    keyGenerator: (req) => clientIp(req),
    passOnStoreError: false,
    handler: refuseWithEnvelope('login', 'Too many login attempts from this address: wait for the time in Retry-After, then retry.'),
  });
  const perIdentifier = limiter(backend, 'login', {
    windowMs: config.windowMs,
    limit: config.loginPerWindow,
    keyGenerator: (req) => {
      const body = req.body as { identifier?: unknown } | undefined;
      const identifier = typeof body?.identifier === 'string' ? loginIdentifierKey(body.identifier) : '';
      return `${clientIp(req)}|${identifier}`;
    },
    passOnStoreError: false,
    handler: refuseWithEnvelope('login', 'Too many login attempts: wait for the time in Retry-After, then retry.'),
  });
  return bothFailClosed(perIdentifier, perIp, 'Login');
}

/**
 * Runs `first` then `second`; when the store cannot count, refuses with 503 (an UnavailableError
 * for the error handler) rather than letting uncounted requests through (password guesses, paid
 * messages). A limiter's own refusal (RateLimitedError) goes on as it is.
 */
function bothFailClosed(first: RequestHandler, second: RequestHandler, what: string): RequestHandler {
  const failClosed = (limit: RequestHandler): RequestHandler => (req, res, next) => {
    limit(req, res, (err?: unknown) => {
      if (err === undefined || err instanceof DomainError) {
        next(err);
        return;
      }
      req.log?.warn({ err }, `${what.toLowerCase()} rate-limit store unavailable; refusing the request`);
      next(new UnavailableError('ServiceUnavailable', `${what} is temporarily unavailable. Retry after the time in Retry-After.`, STORE_DOWN_RETRY_AFTER_SECONDS));
    });
  };
  const [firstLimit, secondLimit] = [failClosed(first), failClosed(second)];
  return (req, res, next) => firstLimit(req, res, (err?: unknown) => (err ? next(err) : secondLimit(req, res, next)));
}

/**
 * Operations that send a one-time code (sign-up, password reset; `name` keeps their counts
 * apart): per identifier whatever the address (nobody can flood one telephone or mailbox from
 * many addresses), then per IP address (one address cannot spread over many identifiers),
 * within their own window (RATE_LIMIT_CODES_WINDOW_MS, an hour by default). Fails closed: each
 * request may send a paid message.
 */
export function codeSenderRateLimiter(backend: RateLimitBackend, config: RateLimitConfig, name: string): RequestHandler {
  const { windowMs, perIp, perIdentifier } = config.codes;
  const byIdentifier = limiter(backend, `${name}-identifier`, {
    windowMs,
    limit: perIdentifier,
    keyGenerator: (req) => {
      const body = req.body as { identifier?: unknown } | undefined;
      return typeof body?.identifier === 'string' ? loginIdentifierKey(body.identifier) : '';
    },
    passOnStoreError: false,
    handler: refuseWithEnvelope(name, 'Too many codes were asked for this identifier: wait for the time in Retry-After, then retry.'),
  });
  const byIp = limiter(backend, `${name}-ip`, {
    windowMs,
    limit: perIp,
    keyGenerator: (req) => clientIp(req),
    passOnStoreError: false,
    handler: refuseWithEnvelope(name, 'Too many codes were asked from this address: wait for the time in Retry-After, then retry.'),
  });
  return bothFailClosed(byIdentifier, byIp, 'Sending a code');
}

/**
 * GET /api/health, per IP, with a budget of its own (RATE_LIMIT_HEALTH) far above any
 * monitor's polling, so a flood from one address is refused (429) without a load balancer
 * ever meeting the limit. Counted in this instance's memory whatever the backend: each
 * instance answers for its own health, and health must answer while Redis is down.
 * Synchronous (a FixedWindowCounter, no store promises): the same headers and 429 as the
 * other limiters, at a fraction of their cost on the route polled hardest.
 */
export function healthRateLimiter(config: RateLimitConfig): RequestHandler {
  const name = 'health';
  const limit = config.healthPerWindow;
  const windowSeconds = Math.ceil(config.windowMs / 1000);
  const counter = new FixedWindowCounter(config.windowMs, (key) => `"${name}"; q=${limit}; w=${windowSeconds}; pk=:${partitionKey(key)}:`);
  return (req, res, next) => {
    const count = counter.hit(`ip:${clientIp(req)}`);
    const secondsLeft = counter.secondsLeft(count);
    res.setHeader('RateLimit', `"${name}"; r=${Math.max(limit - count.hits, 0)}; t=${secondsLeft}`);
    res.setHeader('RateLimit-Policy', count.policy);
    if (count.hits <= limit) {
      next();
      return;
    }
    res.setHeader('Retry-After', String(secondsLeft));
    res.locals[RATE_LIMITED_BY] = name;
    next(new RateLimitedError('Too many health requests: wait for the time in Retry-After, then retry.'));
  };
}

/**
 * The public payment page (PAY_PORT): per IP, a tenth of the anonymous budget for POST (each
 * one may start a payment), the whole budget for page views, counted in the same store as the
 * API's limiters (Redis when REDIS_URL is set, so every instance shares the counts). `onLimit`
 * answers in the page's own format. Fails open like the API limiter: a store outage must not
 * stop customers paying (the form token still guards every POST).
 */
export function payPageRateLimiter(backend: RateLimitBackend, config: RateLimitConfig): RequestHandler {
  return limiter(backend, 'pay', {
    windowMs: config.windowMs,
    limit: (req) => (req.method === 'POST' ? Math.max(1, Math.floor(config.anonymousPerWindow / 10)) : config.anonymousPerWindow),
    keyGenerator: (req) => `${req.method === 'POST' ? 'post' : 'view'}:${clientIp(req)}`,
    passOnStoreError: true,
    handler: refuseWithEnvelope('pay', 'Too many requests from your network. Wait a minute, then try again.'),
  });
}
