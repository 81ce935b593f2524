import http from 'node:http';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig, type Config } from './config';
import { createLogger } from './logger';
import { migrateLatest, openDatabase, type Database } from './db/database';
import { openReadStandby, type ReadStandby } from './db/read-standby';
import { seedDemoDataIfEmpty, type SeedReport } from './seed/demo-seed';
import { createApp, type App } from './http/app';
import { buildHandlers } from './handlers';
import { buildServices, type Services } from './services';
import { memoryRateLimitBackend, redisRateLimitBackend } from './http/rate-limit';
import { connectRedis } from './http/redis';
import { Metrics, metricsAddress, serveMetrics } from './http/metrics';
import { createPayApp } from './pay/pay-app';
import { startBackgroundJobs, withStartRetries, type Jobs } from './jobs';

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

/**
 * The demo data on a fresh development database, and its API key once on the terminal (local
 * development only: seedDemo is never on in production). Written straight to stdout, not
 * through the logger: keys never reach a log line.
 */
async function seedDemo(database: Database, services: Services, logger: Logger): Promise<void> {
  const seedReport: SeedReport = {};
  if (!(await seedDemoDataIfEmpty(database.knex, services, seedReport))) return;
  logger.info('demo data seeded');
  if (seedReport.demoApiKey) process.stdout.write(`\nDemo API key of "${seedReport.demoApiKey.organization}" (local only, shown once): ${seedReport.demoApiKey.secret}\n\n`);
}

interface Started {
  config: Config;
  logger: Logger;
  database: Database;
  services: Services;
  app: App;
  redis?: Redis;
  /** The standby of DATABASE_READ_URL, when set. */
  readStandby?: ReadStandby;
  apiServer: http.Server;
  payServer: http.Server;
  metricsServer?: http.Server;
  jobs?: Jobs;
}

/**
 * Opens the database, migrates it, builds the app and its servers, then starts the job queue
 * with every module's background work. A failed start closes what it opened (above all the
 * embedded database's process) before the error goes on.
 */
async function start(config: Config, logger: Logger): Promise<Started> {
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    embeddedDataDir: config.embeddedDataDir,
    // A multi-host DATABASE_URL: the pool dropped its connections and looks for the primary again.
    onFailover: (host, err) => logger.warn({ err, host: host && `${host.host}:${host.port}` }, 'database failover: finding the primary again'),
  });
  const started: Partial<Started> & Pick<Started, 'config' | 'logger' | 'database' | 'apiServer' | 'payServer'> = {
    config,
    logger,
    database,
    apiServer: http.createServer(),
    payServer: http.createServer(),
  };
  const metrics = new Metrics({ defaultMetrics: true });
  metrics.observePool(database.knex);
  try {
    const applied = await migrateLatest(database.knex);
    logger.info({ database: database.kind, applied, ...(database.embeddedPid ? { embeddedPid: database.embeddedPid } : {}) }, 'database ready');
    started.redis = config.redisUrl ? await connectRedis(config.redisUrl, logger) : undefined;
    const rateLimitBackend = started.redis ? redisRateLimitBackend(started.redis) : memoryRateLimitBackend();
    started.readStandby = openStandby(config, logger, started.redis);
    const monitor = started.readStandby?.monitor;
    if (monitor) {
      // -1: unreachable or not measured yet; Infinity is not a gauge value.
      metrics.observeGauge('database_read_standby_lag_ms', 'Replay lag of the DATABASE_READ_URL standby at its last check (-1: unreachable or unknown).', () => {
        const state = monitor.current;
        return state && state.reachable && Number.isFinite(state.lagMs) ? state.lagMs : -1;
      });
    }
    // The composition root: the services once, then the handlers over them, then the app that routes to both.
    const services = buildServices({ config, knex: database.knex, redis: started.redis, logger });
    started.services = services;
    metrics.observeGauge('statement_streams_open', 'CSV statements streaming now.', () => services.accounts.streams.inUse);
    services.webhooks.onOutcome((outcome) => metrics.webhookDelivery(outcome));
    const handlers = buildHandlers(services, { payUrl: config.payUrl });
    const app = createApp({ config, logger, services, handlers, rateLimitBackend, metrics, reads: started.readStandby?.routing });
    started.app = app;
    await services.ready();
    if (config.seedDemo) await seedDemo(database, services, logger);
    started.apiServer.on('request', app);
    started.payServer.on('request', createPayApp({ config, logger, paymentPage: services.paymentPage, rateLimitBackend }));
    const apiPort = await listen(started.apiServer, config.port);
    const payPort = await listen(started.payServer, config.payPort);
    if (config.metrics.port) started.metricsServer = await serveMetrics(metrics, config.metrics, logger);
    const metricsAt = started.metricsServer ? metricsAddress(started.metricsServer) : 'off';
    logger.info({ apiPort, payPort, payUrl: config.payUrl, rateLimitStore: rateLimitBackend.kind, metrics: metricsAt }, 'listening');
    // Last, once the seed is done: on the embedded back-end the queue shares its one connection.
    started.jobs = await startBackgroundJobs({ knex: database.knex, config, logger, metrics, services });
    logger.info('background jobs registered');
    return started as Started;
  } catch (error) {
    logger.error({ err: error }, 'start-up failed; closing what was opened');
    started.apiServer.close();
    started.payServer.close();
    started.metricsServer?.close();
    await started.jobs?.stop({ graceful: false }).catch((stopError: unknown) => logger.error({ err: stopError }, 'could not stop the job queue'));
    await started.services?.shutdown().catch((stopError: unknown) => logger.error({ err: stopError }, 'could not stop background work'));
    started.redis?.disconnect();
    await started.readStandby?.close().catch((stopError: unknown) => logger.error({ err: stopError }, 'could not close the standby'));
    await database.close().then(
      () => logger.info('start-up failed; the database is closed'),
      (closeError: unknown) => logger.error({ err: closeError }, 'could not close the database'),
    );
    throw error;
  }
}

/** DATABASE_READ_URL: list and statement reads on a standby, while it keeps up (src/db/read-routing.ts). */
function openStandby(config: Config, logger: Logger, redis: Redis | undefined): ReadStandby | undefined {
  const url = config.databaseRead.url;
  if (!url) return undefined;
  const standby = openReadStandby({
    settings: { ...config.databaseRead, url },
    redis: redis && { set: (key, value, mode, ms) => redis.set(key, value, mode, ms), exists: (...keys) => redis.exists(...keys) },
    onFailover: (host, err) => logger.warn({ err, host: host && `${host.host}:${host.port}` }, 'read standby: finding a host again'),
    log: { warn: (message) => logger.debug({ message }, 'read standby pool'), error: (message) => logger.warn({ message }, 'read standby pool'), deprecate() {}, debug() {} },
    onStandbyChange: (usable, state, err) => {
      const lagMs = Number.isFinite(state.lagMs) ? Math.round(state.lagMs) : null;
      if (usable) logger.info({ lagMs }, 'read standby in use for list and statement reads');
      else logger.warn({ err, reachable: state.reachable, lagMs, maxLagMs: config.databaseRead.maxLagMs }, 'read standby not in use (unreachable or lagging): list and statement reads go to the primary');
    },
    onFallback: (err) => logger.warn({ err }, 'a read lost its standby connection: answered by the primary'),
  });
  logger.info({ afterWriteSeconds: config.databaseRead.afterWriteSeconds, maxLagMs: config.databaseRead.maxLagMs }, 'read standby configured');
  return standby;
}

function closeServer(server: http.Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}

/**
 * Stops taking requests and jobs, lets the requests, running jobs and payment settlements in
 * flight finish (within SHUTDOWN_TIMEOUT_MS, then connections are closed) before the pool
 * closes under them.
 */
async function shutdown(started: Started, signal: string): Promise<void> {
  const { config, logger, apiServer, payServer } = started;
  logger.info({ signal }, 'shutting down: no new connections or jobs, finishing in-flight requests and jobs');
  let timedOut!: () => void;
  const deadline = new Promise<void>((resolve) => (timedOut = resolve));
  const forced = setTimeout(() => {
    logger.warn('in-flight work did not finish in time; closing connections');
    apiServer.closeAllConnections();
    payServer.closeAllConnections();
    timedOut();
  }, config.shutdownTimeoutMs);
  forced.unref();
  const drained = (async () => {
    const jobsStopped = started.jobs?.stop({ graceful: true, timeoutMs: config.shutdownTimeoutMs }).catch((err: unknown) => logger.error({ err }, 'could not stop the job queue'));
    await Promise.all([closeServer(apiServer), closeServer(payServer), jobsStopped]);
    started.metricsServer?.close();
    await started.services.shutdown();
  })();
  await Promise.race([drained, deadline]);
  clearTimeout(forced);
  await started.readStandby?.close();
  await started.database.close();
  if (started.redis) await started.redis.quit().catch(() => started.redis?.disconnect());
  logger.info('stopped');
}

/** Composes the process: configuration, logger, the started instance, and its shutdown on a signal. */
async function main(): Promise<void> {
  const config = readConfig();
  const logger = createLogger(config);
  // The mode decides secrets, seeding and the embedded database: say it first.
  logger.info({ mode: config.nodeEnv, seedDemo: config.seedDemo, database: config.databaseUrl ? 'postgres' : 'embedded' }, `starting in ${config.nodeEnv} mode`);
  // The signals are heard from the first moment: a SIGTERM during start-up (the job queue still
  // starting after "listening") would otherwise meet Node's default and kill the process with no
  // clean stop. It is kept, and the instance stops cleanly as soon as it has started.
  const instance: { started?: Started; stopSignal?: string } = {};
  const stop = (started: Started, signal: string) => void shutdown(started, signal).then(() => process.exit(0));
  const onSignal = (signal: string) => {
    if (instance.stopSignal) return;
    instance.stopSignal = signal;
    if (instance.started) stop(instance.started, signal);
    else logger.info({ signal }, 'signal during start-up: stopping as soon as the instance has started');
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  // A start that loses its database connection (a failover, a restart, every backend terminated
  // as in the drill) tries again instead of exiting: each failed try has closed what it opened.
  instance.started = await withStartRetries(
    () => start(config, logger),
    async () => undefined,
    { attempts: 5, delayMs: 1_000, onRetry: (err, attempt) => logger.warn({ err, attempt }, 'start-up failed on a transient database error: trying again') },
  );
  if (instance.stopSignal) stop(instance.started, instance.stopSignal);
}

main().catch((error: unknown) => {
  process.stderr.write(`Failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
