import crypto from 'node:crypto';
import type { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll } from 'vitest';
import { loadConfig, type Config } from '../../src/config';
import { createApp, type App } from '../../src/http/app';
import { memoryRateLimitBackend, redisRateLimitBackend, type RateLimitBackend } from '../../src/http/rate-limit';
import { connectRedis } from '../../src/http/redis';
import { testKnex } from './database';
import type { ReadRouting } from '../../src/db/read-routing';

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
  const app = createApp({ config, knex: testKnex(), logger: pino({ level: config.logLevel }), rateLimitBackend: backend, redis, now: options.now, reads: options.reads });
  await app.services.ready();
  return app;
}
