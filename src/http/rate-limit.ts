import type { Request, RequestHandler, Response } from 'express';
import { ipKeyGenerator, MemoryStore, rateLimit, type Store } from 'express-rate-limit';
import type { Redis } from 'ioredis';
import { RedisStore, type RedisReply } from 'rate-limit-redis';
import type { RateLimitConfig } from '../config';
import { loginIdentifierKey } from '../modules/auth/identifier';

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

/** `namespace` keeps separate deployments (or test runs) sharing one Redis apart. */
export function redisRateLimitBackend(redis: Redis, namespace = ''): RateLimitBackend {
  return {
    kind: 'redis',
    createStore: (prefix) =>
      new RedisStore({
        prefix: `rl:${namespace}${prefix}:`,
        sendCommand: (command: string, ...args: string[]) => redis.call(command, ...args) as Promise<RedisReply>,
      }),
  };
}

function rateLimited(message: string): { success: false; error: string; message: string } {
  return { success: false, error: 'RateLimitExceeded', message };
}

const IPV4 = /^(?:::ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/i;

/**
 * IPv4 (also IPv4-mapped IPv6) keys are the address itself; IPv6 addresses are grouped by
 * /56 subnet through ipKeyGenerator (one client owns a whole subnet). The IPv4 fast path
 * skips a full address parse on every request; the result is the same.
 */
function clientIp(req: Request): string {
  const ip = req.ip ?? req.socket.remoteAddress ?? 'unknown';
  return IPV4.exec(ip)?.[1] ?? ipKeyGenerator(ip);
}

/**
 * The general limiter: one bucket per authenticated user (so an integrator's server behind
 * one IP is not throttled by its neighbours), one per IP for anonymous calls.
 * If the store fails (Redis down) it fails open: authentication still guards every route,
 * and a cache outage must not take payments reads down with it.
 */
export function apiRateLimiter(backend: RateLimitBackend, config: RateLimitConfig): RequestHandler {
  return rateLimit({
    windowMs: config.windowMs,
    limit: (req) => (req.auth ? config.authenticatedPerWindow : config.anonymousPerWindow),
    keyGenerator: (req) => (req.auth ? `user:${req.auth.userId}` : `ip:${clientIp(req)}`),
    identifier: 'api',
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    store: backend.createStore('api'),
    passOnStoreError: true,
    handler: (_req, res, _next, options) => {
      res.status(options.statusCode).json(rateLimited('Too many requests: wait for the time in Retry-After, then retry.'));
    },
  });
}

/**
 * Login attempts per IP and identifier. Fails closed: when the store cannot count, login
 * answers 503 rather than letting unlimited password guesses through.
 */
export function loginRateLimiter(backend: RateLimitBackend, config: RateLimitConfig): RequestHandler {
  const limiter = rateLimit({
    windowMs: config.windowMs,
    limit: config.loginPerWindow,
    keyGenerator: (req) => {
      const body = req.body as { identifier?: unknown } | undefined;
      const identifier = typeof body?.identifier === 'string' ? loginIdentifierKey(body.identifier) : '';
      return `${clientIp(req)}|${identifier}`;
    },
    identifier: 'login',
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    store: backend.createStore('login'),
    passOnStoreError: false,
    handler: (_req, res, _next, options) => {
      res.status(options.statusCode).json(rateLimited('Too many login attempts: wait for the time in Retry-After, then retry.'));
    },
  });
  return (req, res, next) => {
    limiter(req, res, (err?: unknown) => {
      if (err) {
        req.log?.warn({ err }, 'login rate-limit store unavailable; refusing login');
        res.setHeader('Retry-After', '30');
        res.status(503).json({
          success: false,
          error: 'ServiceUnavailable',
          message: 'Login is temporarily unavailable. Retry after the time in Retry-After.',
        });
        return;
      }
      next();
    });
  };
}

/**
 * The public payment page (PAY_PORT): per IP, a tenth of the anonymous budget for POST (each
 * one may start a payment), the whole budget for page views, counted in the same store as the
 * API's limiters (Redis when REDIS_URL is set, so every instance shares the counts). `onLimit`
 * answers in the page's own format. Fails open like the API limiter: a store outage must not
 * stop customers paying (the form token still guards every POST).
 */
export function payPageRateLimiter(backend: RateLimitBackend, config: RateLimitConfig, onLimit: (req: Request, res: Response) => void): RequestHandler {
  return rateLimit({
    windowMs: config.windowMs,
    limit: (req) => (req.method === 'POST' ? Math.max(1, Math.floor(config.anonymousPerWindow / 10)) : config.anonymousPerWindow),
    keyGenerator: (req) => `${req.method === 'POST' ? 'post' : 'view'}:${clientIp(req)}`,
    identifier: 'pay',
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    store: backend.createStore('pay'),
    passOnStoreError: true,
    handler: (req, res) => onLimit(req, res),
  });
}
