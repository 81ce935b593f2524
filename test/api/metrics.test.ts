import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics, startMetricsServer } from '../../src/http/metrics';
import { memoryRateLimitBackend } from '../../src/http/rate-limit';
import { testConfig, composeTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, createUser } from '../support/factories';
import { startTestJobs, testQueue, until } from '../support/jobs';

let app: App;
let metrics: Metrics;
let server: http.Server;
let metricsUrl: string;

beforeAll(async () => {
  metrics = new Metrics();
  metrics.observePool(testKnex());
  // A tight per-user limit, so one user meets the limiter.
  const config = testConfig({ RATE_LIMIT_AUTHENTICATED: '3' });
  app = composeTestApp({ config, knex: testKnex(), logger: pino({ level: 'silent' }), rateLimitBackend: memoryRateLimitBackend(), metrics });
  await app.services.ready();
  server = await startMetricsServer(metrics, { host: '127.0.0.1', port: 0 });
  metricsUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** The value of one sample line, e.g. sample(text, 'http_requests_total{operation="getMe",method="GET",status="200"}'). */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('/metrics', () => {
  it('serves Prometheus text on its own loopback port: requests by operationId and status with durations, pool, jobs, rate-limit refusals', async () => {
    expect((server.address() as AddressInfo).address).toBe('127.0.0.1');
    const token = await accessTokenFor(app, await createUser());
    for (let i = 0; i < 3; i += 1) expect((await request(app).get('/api/me').set(bearer(token))).status).toBe(200);
    expect((await request(app).get('/api/me').set(bearer(token))).status).toBe(429);
    expect((await request(app).get('/api/no-such-path')).status).toBe(404);
    const jobs = await startTestJobs({ observer: metrics, config: { retryLimit: 0 } });
    const queue = testQueue('metrics');
    await jobs.work(queue, () => Promise.reject(new Error('boom')));
    await jobs.send(queue, {});
    await until(async () => (await metrics.registry.getSingleMetricAsString('job_runs_total')).includes(queue));
    await jobs.stop();

    const res = await fetch(metricsUrl);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(sample(text, 'http_requests_total{operation="getMe",method="GET",status="200"}')).toBe(3);
    expect(sample(text, 'http_requests_total{operation="getMe",method="GET",status="429"}')).toBe(1);
    expect(sample(text, 'http_requests_total{operation="unmatched",method="GET",status="404"}')).toBe(1);
    expect(sample(text, 'http_request_duration_seconds_count{operation="getMe",status="200"}')).toBe(3);
    expect(sample(text, 'rate_limit_refusals_total{limiter="api"}')).toBe(1);
    expect(sample(text, `job_runs_total{queue="${queue}",outcome="failure"}`)).toBe(1);
    // Every request answered and the jobs stopped: no connection lent out, nobody waiting for one.
    expect(sample(text, 'db_pool_connections_in_use{pool="main"}')).toBe(0);
    expect(sample(text, 'db_pool_acquires_waiting{pool="main"}')).toBe(0);
    expect(text).not.toContain('no-such-path');
    expect((await fetch(metricsUrl.replace('/metrics', '/other'))).status).toBe(404);
  });

  it('is not served on the API port', async () => {
    expect((await request(app).get('/metrics')).status).toBe(404);
    expect((await request(app).get('/api/metrics')).status).toBe(404);
  });
});
