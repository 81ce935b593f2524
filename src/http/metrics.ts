import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestHandler } from 'express';
import type { Knex } from 'knex';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { OperationMatcher } from './operation-matcher';
import { contractOperation } from './request-context';

/** What a limiter writes into `res.locals` when it refuses a request (counted by the metrics). */
export const RATE_LIMITED_BY = 'rateLimitedBy';

interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
}

/**
 * Prometheus metrics (prom-client), served on a port of their own (see startMetricsServer):
 * requests by contract operation and status with durations, the database pool, job runs and
 * jobs waiting, rate-limit refusals. Labels are bounded: a request the contract does not know is
 * `unmatched`, never its raw path.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({ name: 'http_requests_total', help: 'API requests by contract operation, method and status.', labelNames: ['operation', 'method', 'status'] as const, registers: [this.registry] });
  private readonly durations = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'API request durations by contract operation and status.',
    labelNames: ['operation', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  private readonly jobRuns = new Counter({ name: 'job_runs_total', help: 'Job runs (background work, src/jobs) by queue and outcome (success, failure).', labelNames: ['queue', 'outcome'] as const, registers: [this.registry] });
  private readonly webhookDeliveries = new Counter({ name: 'webhook_deliveries_total', help: 'Webhook delivery attempts by outcome (succeeded, failed, gone, exhausted).', labelNames: ['outcome'] as const, registers: [this.registry] });
  private readonly refusals = new Counter({ name: 'rate_limit_refusals_total', help: 'Requests refused by a rate limiter (429), by limiter.', labelNames: ['limiter'] as const, registers: [this.registry] });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /**
   * Counts and times every response, labelled by the operation the validator matched, or for
   * a request refused before it (rate limit, body parser) the one `match` finds.
   */
  requestMetrics(match: OperationMatcher): RequestHandler {
    return (req, res, next) => {
      const started = process.hrtime.bigint();
      res.once('finish', () => {
        const operation = contractOperation(req)?.operationId ?? match(req.method, req.originalUrl.split('?')[0] ?? '')?.operationId ?? 'unmatched';
        const status = String(res.statusCode);
        this.requests.inc({ operation, method: req.method, status });
        this.durations.observe({ operation, status }, Number(process.hrtime.bigint() - started) / 1e9);
        const limiter = res.locals[RATE_LIMITED_BY] as string | undefined;
        if (limiter) this.refusals.inc({ limiter });
      });
      next();
    };
  }

  /** Reports the pool's connections in use, free, and the acquires waiting, read at each scrape. */
  observePool(knex: Knex, name = 'main'): void {
    const pool = () => knex.client.pool as TarnPool | undefined;
    const gauge = (metric: string, help: string, read: (p: TarnPool) => number) =>
      new Gauge({
        name: metric,
        help,
        labelNames: ['pool'] as const,
        registers: [this.registry],
        collect() {
          const current = pool();
          if (current) this.set({ pool: name }, read(current));
        },
      });
    gauge('db_pool_connections_in_use', 'Database connections lent out.', (p) => p.numUsed());
    gauge('db_pool_connections_free', 'Idle database connections in the pool.', (p) => p.numFree());
    gauge('db_pool_acquires_waiting', 'Requests waiting for a database connection.', (p) => p.numPendingAcquires());
  }

  /** Reports a value read at each scrape (for example the statement streams open). */
  observeGauge(name: string, help: string, read: () => number): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }

  webhookDelivery(outcome: string): void {
    this.webhookDeliveries.inc({ outcome });
  }

  jobRun(queue: string, outcome: 'success' | 'failure'): void {
    this.jobRuns.inc({ queue, outcome });
  }

  /** Reports the jobs waiting per queue (`jobs_queued{queue}`), counted at each scrape. */
  observeJobs(count: () => Promise<Record<string, number>>): void {
    new Gauge({
      name: 'jobs_queued',
      help: 'Jobs waiting per queue (queued, deferred or waiting for a retry).',
      labelNames: ['queue'] as const,
      registers: [this.registry],
      async collect() {
        for (const [queue, queued] of Object.entries(await count())) this.set({ queue }, queued);
      },
    });
  }
}

/**
 * Serves GET /metrics on its own port, bound to loopback unless told otherwise, so the API's
 * port never exposes it.
 */
export function startMetricsServer(metrics: Metrics, options: { host: string; port: number }): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
      return;
    }
    metrics.registry.metrics().then(
      (body) => res.writeHead(200, { 'Content-Type': metrics.registry.contentType }).end(body),
      () => res.writeHead(500, { 'Content-Type': 'text/plain' }).end('metrics unavailable\n'),
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve(server));
  });
}

/**
 * The metrics server of an instance, or none when its port is taken (several instances on one
 * host with the default METRICS_PORT): metrics are an aid, never a reason to stop serving the
 * API, so the instance says once that they are off and goes on. Other errors (a bad host)
 * still fail the start.
 */
export async function serveMetrics(
  metrics: Metrics,
  options: { host: string; port: number },
  logger: { warn(fields: object, message: string): void },
): Promise<http.Server | undefined> {
  try {
    return await startMetricsServer(metrics, options);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    logger.warn(
      { metricsPort: options.port, metricsHost: options.host },
      `metrics are off: ${options.host}:${options.port} is taken (another instance on this host?); give each instance its own METRICS_PORT, or 0`,
    );
    return undefined;
  }
}

export function metricsAddress(server: http.Server): string {
  const address = server.address() as AddressInfo;
  return `${address.address}:${address.port}`;
}
