import http from 'node:http';
import pino from 'pino';
import { loadConfig } from '../../../src/config';
import { migrateLatest, openDatabase } from '../../../src/db/database';
import { buildHandlers } from '../../../src/handlers';
import { createApp } from '../../../src/http/app';
import { memoryRateLimitBackend, redisRateLimitBackend } from '../../../src/http/rate-limit';
import { connectRedis } from '../../../src/http/redis';
import { createLogger } from '../../../src/logger';
import { buildServices } from '../../../src/services';
import { loadLimitPolicy, uniformPolicy } from '../../../src/modules/limits';

/**
 * The real API as `make run` builds it (production settings: no response validation, info
 * logs written as in production, into /dev/null), on DATABASE_URL or the embedded database.
 */
async function main(): Promise<void> {
  const config = loadConfig({
    ...process.env,
    JWT_SECRET: process.env.JWT_SECRET ?? 'bench-secret-bench-secret-bench-secret-0123',
    PAY_SECRET: process.env.PAY_SECRET ?? 'bench-pay-secret-bench-pay-secret-0123456',
    API_KEY_PEPPER: process.env.API_KEY_PEPPER ?? 'bench-api-key-pepper-bench-api-key-pepper-0',
    PII_ENCRYPTION_KEY: process.env.PII_ENCRYPTION_KEY ?? `bench:${'be'.repeat(32)}`,
    MOBILE_MONEY_CALLBACK_SECRET: process.env.MOBILE_MONEY_CALLBACK_SECRET ?? `whsec_${'be'.repeat(24)}`,
    CRYPTO_NETWORK: 'sandbox',
    CRYPTO_ADDRESS_SECRET: process.env.CRYPTO_ADDRESS_SECRET ?? 'b'.repeat(40),
    RATE_LIMIT_AUTHENTICATED: '1000000',
    RATE_LIMIT_ANONYMOUS: '1000000',
    // The health bench polls from one address far past any monitor: it measures the route
    // with its limiter counting, not the 429s.
    RATE_LIMIT_HEALTH: '1000000',
  });
  // The production logger (JSON lines, written synchronously as `make run` does), into /dev/null.
  const logger = createLogger({ ...config, logFormat: 'json' }, pino.destination({ dest: '/dev/null', sync: false }));
  const database = await openDatabase({ databaseUrl: config.databaseUrl, embeddedDataDir: 'memory://', poolMax: 20 });
  await migrateLatest(database.knex);
  const redis = config.redisUrl ? await connectRedis(config.redisUrl, logger) : undefined;
  // The shipped currencies and tiers with caps no bench reaches (its users hold 10^12 XOF): every
  // limit check runs in full, none refuses, so the bench measures what the checks cost.
  const limitPolicy = uniformPolicy(loadLimitPolicy(), 10n ** 18n, 'bench-unbounded');
  const services = buildServices({ config, knex: database.knex, logger, redis, limitPolicy });
  const app = createApp({
    config,
    logger,
    services,
    handlers: buildHandlers(services, { payUrl: config.payUrl }),
    rateLimitBackend: redis ? redisRateLimitBackend(redis, `bench-${Date.now()}:`) : memoryRateLimitBackend(),
  });
  await services.ready();
  // BENCH_LIMITS=off: no policy row, so ledger_post finds no tier and checks no cap. Alternated
  // with the default (every check runs, none refuses), it measures what the checks cost on the
  // same code.
  if (process.env.BENCH_LIMITS === 'off') await database.knex('limit_policies').del();
  const server = http.createServer(app).listen(config.port, () => process.stdout.write(`LISTENING ${config.port}\n`));
  // The bench asks for the group commits' batch sizes so far: index = size, value = batches.
  process.on('SIGUSR2', () => {
    const { sizes, batchesFailed } = services.transfers.batcher;
    const counted = (batcher: { sizes: number[]; batchesFailed: number }) => ({ sizes: Array.from(batcher.sizes, (n) => n ?? 0), failed: batcher.batchesFailed });
    const windows = { escrows: counted(services.escrows.window.batcher), tontines: counted(services.tontines.window.batcher) };
    process.stdout.write(`BATCHES ${JSON.stringify({ sizes: Array.from(sizes, (n) => n ?? 0), failed: batchesFailed, windows })}\n`);
  });
  process.on('SIGTERM', () => {
    server.close(async () => {
      await services.shutdown();
      await database.close();
      await redis?.quit();
      process.exit(0);
    });
    server.closeAllConnections();
  });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
