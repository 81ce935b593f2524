import http from 'node:http';
import type { Redis } from 'ioredis';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { ConfigError, loadConfig, type Config } from './config';
import { migrateLatest, openDatabase } from './db/database';
import { seedDemoDataIfEmpty } from './db/seed/demo-seed';
import { createApp, type App } from './http/app';
import { memoryRateLimitBackend, redisRateLimitBackend } from './http/rate-limit';
import { connectRedis } from './http/redis';
import { createPayApp } from './pay/pay-app';

function readConfig(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${error.message}\n`);
      process.exit(78);
    }
    throw error;
  }
}

function listen(server: http.Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, () => resolve((server.address() as AddressInfo).port));
  });
}

async function main(): Promise<void> {
  const config = readConfig();
  const logger = pino({ level: config.logLevel, redact: ['*.password', '*.token'] });
  const database = await openDatabase({ databaseUrl: config.databaseUrl, embeddedDataDir: config.embeddedDataDir });
  // From here on a failed start closes what it opened (above all the embedded database's
  // process) before the process exits.
  let redis: Redis | undefined;
  let app: App | undefined;
  const apiServer = http.createServer();
  const payServer = http.createServer();
  try {
    const applied = await migrateLatest(database.knex);
    logger.info({ database: database.kind, applied, ...(database.embeddedPid ? { embeddedPid: database.embeddedPid } : {}) }, 'database ready');
    redis = config.redisUrl ? await connectRedis(config.redisUrl, logger) : undefined;
    const rateLimitBackend = redis ? redisRateLimitBackend(redis) : memoryRateLimitBackend();

    app = createApp({ config, knex: database.knex, logger, rateLimitBackend, redis });
    await app.services.ready();
    if (config.seedDemo && (await seedDemoDataIfEmpty(database.knex, app.services))) logger.info('demo data seeded');
    const payApp = createPayApp({ config, knex: database.knex, logger, services: app.services, rateLimitBackend });

    apiServer.on('request', app);
    payServer.on('request', payApp);
    const apiPort = await listen(apiServer, config.port);
    const payPort = await listen(payServer, config.payPort);
    logger.info({ apiPort, payPort, payUrl: config.payUrl, rateLimitStore: rateLimitBackend.kind }, 'listening');
  } catch (error) {
    logger.error({ err: error }, 'start-up failed; closing what was opened');
    apiServer.close();
    payServer.close();
    app?.services.shutdown();
    redis?.disconnect();
    await database.close().catch((closeError: unknown) => logger.error({ err: closeError }, 'could not close the database'));
    throw error;
  }
  const started = app;

  // Pending bank and mobile-money transfers are handed to their rail again at start and then
  // every minute: a restart or a failed settlement never leaves money parked in transit.
  const resumePendingTransfers = async (): Promise<void> => {
    try {
      const resumed = await started.services.transfers.resumePending();
      if (resumed) logger.info({ resumed }, 'pending transfers handed to their rail again');
    } catch (err) {
      logger.error({ err }, 'could not resume pending transfers');
    }
  };
  await resumePendingTransfers();
  const pendingSweep = setInterval(() => void resumePendingTransfers(), 60_000);
  pendingSweep.unref();

  // Payments on the payment page whose sandbox decision is due are settled at start (a
  // restart lost their timers) and then every 10 seconds, a bounded batch at a time; reads
  // (the status API, the result page) never settle anything.
  let paymentSweepRun: Promise<void> | undefined;
  const sweepDuePayments = (): Promise<void> => {
    paymentSweepRun ??= (async () => {
      try {
        const settled = await started.services.payments.sweepDue({ batchSize: 100 });
        if (settled) logger.info({ settled }, 'due sandbox payments settled');
      } catch (err) {
        logger.error({ err }, 'could not settle due payments');
      } finally {
        paymentSweepRun = undefined;
      }
    })();
    return paymentSweepRun;
  };
  await sweepDuePayments();
  const paymentSweep = setInterval(() => void sweepDuePayments(), 10_000);
  paymentSweep.unref();

  // Expired idempotency keys are free for reuse already; deleting them keeps the table small.
  const purgeExpiredKeys = async (): Promise<void> => {
    try {
      let purged = 0;
      for (let batch = await started.services.idempotency.purgeExpired(); batch > 0; batch = await started.services.idempotency.purgeExpired()) purged += batch;
      if (purged) logger.info({ purged }, 'expired idempotency keys deleted');
    } catch (err) {
      logger.error({ err }, 'could not delete expired idempotency keys');
    }
  };
  const keyPurge = setInterval(() => void purgeExpiredKeys(), 15 * 60_000);
  keyPurge.unref();

  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: no new connections, finishing in-flight requests');
    const forced = setTimeout(() => {
      logger.warn('in-flight requests did not finish in time; closing connections');
      apiServer.closeAllConnections();
      payServer.closeAllConnections();
    }, config.shutdownTimeoutMs);
    forced.unref();
    const closeServer = (server: http.Server) =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
    await Promise.all([closeServer(apiServer), closeServer(payServer)]);
    clearTimeout(forced);
    clearInterval(pendingSweep);
    clearInterval(paymentSweep);
    await paymentSweepRun;
    clearInterval(keyPurge);
    started.services.shutdown();
    await database.close();
    if (redis) await redis.quit().catch(() => redis.disconnect());
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`Failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
