import crypto from 'node:crypto';
import type { Express } from 'express';
import type { Redis } from 'ioredis';
import type { Knex } from 'knex';
import pino, { type Logger } from 'pino';
import { afterAll } from 'vitest';
import { loadConfig, type Config } from '../../src/config';
import { buildHandlers } from '../../src/handlers';
import { createApp } from '../../src/http/app';
import type { Metrics } from '../../src/http/metrics';
import { memoryRateLimitBackend, redisRateLimitBackend, type RateLimitBackend } from '../../src/http/rate-limit';
import { connectRedis } from '../../src/http/redis';
import { buildServices, type Services } from '../../src/services';
import { testKnex } from './database';
import type { ReadRouting } from '../../src/db/read-routing';
import type { LimitPolicy } from '../../src/modules/limits';
import { UNBOUNDED_LIMIT_POLICY } from './limits';

/** The API a test drives, with the services it was composed over (a test sets up and checks state through them). */
export interface App extends Express {
  services: Services;
  /** Where its rate-limit counters live; a test's payment page (createPayApp) counts there too. */
  rateLimitBackend: RateLimitBackend;
}

export interface ComposeDeps {
  config: Config;
  knex: Knex;
  logger: Logger;
  rateLimitBackend: RateLimitBackend;
  redis?: Redis;
  /** The services' clock; the system clock when absent. */
  now?: () => Date;
  metrics?: Metrics;
  reads?: ReadRouting;
  /** The tier limits; unbounded unless a test names a policy (SHIPPED_LIMIT_POLICY for the real caps). */
  limitPolicy?: LimitPolicy;
}

/**
 * What src/main.ts composes, in the same order (the services once, the handlers over them, then
 * the app that routes to both), on a test's database, clock and logger.
 */
export function composeTestApp(deps: ComposeDeps): App {
  const { config, metrics } = deps;
  const services = buildServices({ config, knex: deps.knex, logger: deps.logger, redis: deps.redis, now: deps.now, limitPolicy: deps.limitPolicy ?? UNBOUNDED_LIMIT_POLICY });
  if (metrics) services.webhooks.onOutcome((outcome) => metrics.webhookDelivery(outcome));
  const handlers = buildHandlers(services, { payUrl: config.payUrl });
  const app = createApp({ config, logger: deps.logger, services, handlers, rateLimitBackend: deps.rateLimitBackend, metrics, reads: deps.reads });
  return Object.assign(app, { services, rateLimitBackend: deps.rateLimitBackend });
}

export interface TestAppOptions {
  /** Environment overrides, as strings, exactly as process.env would carry them. */
  env?: Record<string, string>;
  rateLimitBackend?: RateLimitBackend;
  /** The services' clock. */
  now?: () => Date;
  /** Settings no environment variable gives in a test (validateResponses: false, as in production). */
  config?: Partial<Config>;
  /** Where list and statement reads go (a standby); every read on the primary when absent. */
  reads?: ReadRouting;
  /** The tier limits the app installs; unbounded when absent (see test/support/limits.ts). */
  limitPolicy?: LimitPolicy;
}

let sharedRedis: Promise<Redis> | undefined;

/** The Redis of REDIS_URL, one client per worker, closed after the file. */
export function testRedis(): Promise<Redis> | undefined {
  const url = process.env.REDIS_URL;
  if (!url) return undefined;
  if (!sharedRedis) {
    sharedRedis = connectRedis(url, pino({ level: 'silent' }));
    afterAll(async () => {
      const redis = await sharedRedis;
      sharedRedis = undefined;
      await redis?.quit();
    });
  }
  return sharedRedis;
}

export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // Rate limiting stays on in tests, with room for a test's own traffic.
    RATE_LIMIT_AUTHENTICATED: '100000',
    RATE_LIMIT_ANONYMOUS: '100000',
    RATE_LIMIT_LOGIN: '100000',
    RATE_LIMIT_LOGIN_PER_IP: '100000',
    RATE_LIMIT_CODES_PER_IP: '100000',
    RATE_LIMIT_CODES_PER_IDENTIFIER: '100000',
    LOGIN_MAX_CONCURRENT_VERIFICATIONS: '100',
    PAY_URL: 'http://pay.test',
    ...env,
  });
}

/**
 * The real app on the run's database. With REDIS_URL the rate-limit counters go to Redis
 * under a namespace of their own, so runs and apps never share counters.
 */
export async function buildTestApp(options: TestAppOptions = {}): Promise<App> {
  const config = { ...testConfig(options.env), ...options.config };
  let backend = options.rateLimitBackend;
  const redisPromise = testRedis();
  const redis = redisPromise ? await redisPromise : undefined;
  if (!backend) backend = redis ? redisRateLimitBackend(redis, `test-${crypto.randomUUID()}:`) : memoryRateLimitBackend();
  const app = composeTestApp({ config, knex: testKnex(), logger: pino({ level: config.logLevel }), rateLimitBackend: backend, redis, now: options.now, reads: options.reads, limitPolicy: options.limitPolicy });
  await app.services.ready();
  return app;
}
