import http from 'node:http';
import type { Redis } from 'ioredis';
import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig, type Config } from './config';
import { createLogger } from './logger';
import { migrateLatest, openDatabase } from './db/database';
import { seedDemoDataIfEmpty, type SeedReport } from './seed/demo-seed';
import { createApp, type App } from './http/app';
import { memoryRateLimitBackend, redisRateLimitBackend } from './http/rate-limit';
import { connectRedis } from './http/redis';
import { Metrics, metricsAddress, serveMetrics } from './http/metrics';
import { createPayApp } from './pay/pay-app';
import { startBackgroundJob } from './background-job';

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
  const logger = createLogger(config);
  // The mode decides secrets, seeding and the embedded database: say it first.
  logger.info({ mode: config.nodeEnv, seedDemo: config.seedDemo, database: config.databaseUrl ? 'postgres' : 'embedded' }, `starting in ${config.nodeEnv} mode`);
  const database = await openDatabase({ databaseUrl: config.databaseUrl, embeddedDataDir: config.embeddedDataDir });
  // From here on a failed start closes what it opened (above all the embedded database's
  // process) before the process exits.
  let redis: Redis | undefined;
  let app: App | undefined;
  const apiServer = http.createServer();
  const payServer = http.createServer();
  const metrics = new Metrics({ defaultMetrics: true });
  metrics.observePool(database.knex);
  let metricsServer: http.Server | undefined;
  try {
    const applied = await migrateLatest(database.knex);
    logger.info({ database: database.kind, applied, ...(database.embeddedPid ? { embeddedPid: database.embeddedPid } : {}) }, 'database ready');
    redis = config.redisUrl ? await connectRedis(config.redisUrl, logger) : undefined;
    const rateLimitBackend = redis ? redisRateLimitBackend(redis) : memoryRateLimitBackend();

    app = createApp({ config, knex: database.knex, logger, rateLimitBackend, redis, metrics });
    const accounts = app.services.accounts;
    metrics.observeGauge('statement_streams_open', 'CSV statements streaming now.', () => accounts.streams.inUse);
    await app.services.ready();
    const seedReport: SeedReport = {};
    if (config.seedDemo && (await seedDemoDataIfEmpty(database.knex, app.services, seedReport))) {
      logger.info('demo data seeded');
      // The demo API key, once, on the terminal (local development only: seedDemo is never on in
      // production). Written straight to stdout, not through the logger: keys never reach a log line.
      if (seedReport.demoApiKey) process.stdout.write(`\nDemo API key of "${seedReport.demoApiKey.organization}" (local only, shown once): ${seedReport.demoApiKey.secret}\n\n`);
    }
    const payApp = createPayApp({ config, logger, paymentPage: app.services.paymentPage, rateLimitBackend });

    apiServer.on('request', app);
    payServer.on('request', payApp);
    const apiPort = await listen(apiServer, config.port);
    const payPort = await listen(payServer, config.payPort);
    if (config.metrics.port) metricsServer = await serveMetrics(metrics, config.metrics, logger);
    logger.info({ apiPort, payPort, payUrl: config.payUrl, rateLimitStore: rateLimitBackend.kind, metrics: metricsServer ? metricsAddress(metricsServer) : 'off' }, 'listening');
  } catch (error) {
    logger.error({ err: error }, 'start-up failed; closing what was opened');
    apiServer.close();
    payServer.close();
    metricsServer?.close();
    await app?.services.shutdown().catch((stopError: unknown) => logger.error({ err: stopError }, 'could not stop background work'));
    redis?.disconnect();
    await database.close().then(
      () => logger.info('start-up failed; the database is closed'),
      (closeError: unknown) => logger.error({ err: closeError }, 'could not close the database'),
    );
    throw error;
  }
  const started = app;
  const onJobRun = (job: string, outcome: 'success' | 'failure') => metrics.jobRun(job, outcome);

  // Pending bank and mobile-money transfers are handed to their rail again at start and then
  // every minute: a restart or a failed settlement never leaves money parked in transit. Each
  // is claimed with SKIP LOCKED and a hand-over lease, so with several instances the rail is
  // called once per transfer (and again only when its outcome has not come within the lease).
  const pendingTransfers = startBackgroundJob('resume pending transfers', 60_000, logger, async () => {
    const resumed = await started.services.transfers.resumePending();
    if (resumed) logger.info({ resumed }, 'pending transfers handed to their rail again');
  }, onJobRun);
  // Payments on the payment page whose sandbox decision is due are settled at start (a
  // restart lost their timers) and then every 10 seconds, a bounded batch at a time; reads
  // (the status API, the result page) never settle anything. Each payment is claimed with
  // SKIP LOCKED: instances sweeping at once settle different ones, each counting its own.
  const duePayments = startBackgroundJob('settle due payments', 10_000, logger, async () => {
    const settled = await started.services.payments.sweepDue({ batchSize: 100 });
    if (settled) logger.info({ settled }, 'due sandbox payments settled');
  }, onJobRun);
  // Expired idempotency keys are free for reuse already; deleting them keeps the table small.
  const keyPurge = startBackgroundJob('purge expired idempotency keys', 15 * 60_000, logger, async () => {
    let purged = 0;
    for (let batch = await started.services.idempotency.purgeExpired(); batch > 0; batch = await started.services.idempotency.purgeExpired()) purged += batch;
    if (purged) logger.info({ purged }, 'expired idempotency keys deleted');
  }, onJobRun);
  // Failed-login counters nobody touched for longer than a known source is remembered.
  const loginAttemptsPurge = startBackgroundJob('purge old login attempts', 60 * 60_000, logger, async () => {
    const purged = await started.services.auth.purgeLoginAttempts();
    if (purged) logger.info({ purged }, 'old login attempts deleted');
  }, onJobRun);
  // Delivered escrows whose inspection period ended without a dispute are released to the
  // seller, a bounded batch per run; instances running it at once skip each other's rows.
  const escrowRelease = startBackgroundJob('release escrows after inspection', config.escrows.releaseIntervalMs, logger, async () => {
    const released = await started.services.escrows.releaseDue({ batchSize: config.escrows.releaseBatchSize });
    if (released) logger.info({ released }, 'escrows released after their inspection period');
  }, onJobRun);
  // Tontine contributions still unpaid when their cycle falls due become `late` (every
  // minute; safe with several instances: each run locks its tontines with SKIP LOCKED).
  const lateContributions = startBackgroundJob('mark late tontine contributions', 60_000, logger, async () => {
    let marked = 0;
    for (let batch = await started.services.tontines.markLateContributions(); batch > 0; batch = await started.services.tontines.markLateContributions()) marked += batch;
    if (marked) logger.info({ marked }, 'late tontine contributions marked');
  }, onJobRun);
  await Promise.all([pendingTransfers.runNow(), duePayments.runNow(), escrowRelease.runNow(), lateContributions.runNow()]);
  const jobs = [pendingTransfers, duePayments, keyPurge, loginAttemptsPurge, escrowRelease, lateContributions];

  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: no new connections, finishing in-flight requests');
    let timedOut!: () => void;
    const deadline = new Promise<void>((resolve) => (timedOut = resolve));
    const forced = setTimeout(() => {
      logger.warn('in-flight work did not finish in time; closing connections');
      apiServer.closeAllConnections();
      payServer.closeAllConnections();
      timedOut();
    }, config.shutdownTimeoutMs);
    forced.unref();
    const closeServer = (server: http.Server) =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
    // Requests, background runs and payment settlements in flight finish (within the same
    // bounded time) before the pool closes under them.
    const drained = (async () => {
      await Promise.all([closeServer(apiServer), closeServer(payServer), ...jobs.map((job) => job.stop())]);
      metricsServer?.close();
      await started.services.shutdown();
    })();
    await Promise.race([drained, deadline]);
    clearTimeout(forced);
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
