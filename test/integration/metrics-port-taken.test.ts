import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Metrics, serveMetrics } from '../../src/http/metrics';

/**
 * Several instances on one host with the default METRICS_PORT. The second one to bind the
 * port finds it taken (EADDRINUSE): it serves the API all the same and says once that its
 * metrics are off, since metrics are not worth an instance.
 */
const ROOT = path.resolve(__dirname, '../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
const tempDirs: string[] = [];
const servers: http.Server[] = [];

afterAll(async () => {
  for (const server of servers) await new Promise<void>((resolve) => server.close(() => resolve()));
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

function portOf(server: http.Server): number {
  return (server.address() as AddressInfo).port;
}

describe('a metrics port already taken', () => {
  it('the metrics server started twice on one port: the first serves, the second is off with one warning, nothing throws', async () => {
    const first = await serveMetrics(new Metrics(), { host: '127.0.0.1', port: 0 }, { warn: () => undefined });
    expect(first).toBeDefined();
    servers.push(first as http.Server);
    const port = portOf(first as http.Server);
    const warnings: Array<{ fields: object; message: string }> = [];
    const second = await serveMetrics(new Metrics(), { host: '127.0.0.1', port }, { warn: (fields, message) => warnings.push({ fields, message }) });
    expect(second).toBeUndefined();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.message).toContain('metrics are off');
    expect(warnings[0]?.fields).toEqual({ metricsPort: port, metricsHost: '127.0.0.1' });
    expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(200);
  });

  it('a whole instance whose METRICS_PORT another instance holds starts, serves the API and logs "metrics are off" once', async () => {
    // The other instance's metrics server holds the port.
    const other = await serveMetrics(new Metrics(), { host: '127.0.0.1', port: 0 }, { warn: () => undefined });
    servers.push(other as http.Server);
    const metricsPort = portOf(other as http.Server);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'metrics-taken-'));
    tempDirs.push(dir);
    const env: Record<string, string | undefined> = {
      ...process.env,
      NODE_ENV: 'development',
      SEED_DEMO: 'false',
      PORT: '0',
      PAY_PORT: '0',
      METRICS_PORT: String(metricsPort),
      EMBEDDED_DATA_DIR: path.join(dir, 'pg'),
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    };
    delete env.DATABASE_URL;
    delete env.REDIS_URL;
    delete env.VITEST;
    const child: ChildProcess = spawn(TSX, ['src/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    try {
      const apiPort = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no "listening" within 90 s:\n${output}`)), 90_000);
        const onData = (chunk: Buffer) => {
          output += chunk.toString();
          const line = output.split('\n').find((l) => l.includes('"apiPort"'));
          if (line) {
            clearTimeout(timer);
            resolve((JSON.parse(line) as { apiPort: number }).apiPort);
          }
        };
        child.stdout?.on('data', onData);
        child.stderr?.on('data', onData);
        child.once('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`exited with ${code} before listening:\n${output}`));
        });
      });
      const health = await fetch(`http://127.0.0.1:${apiPort}/api/health`);
      expect(health.status).toBe(200);
      const lines = output.split('\n').filter((l) => l.includes('metrics are off'));
      expect(lines).toHaveLength(1);
      const listening = JSON.parse(output.split('\n').find((l) => l.includes('"apiPort"')) as string) as { metrics: string };
      expect(listening.metrics).toBe('off');
    } finally {
      child.removeAllListeners('exit');
      if (child.exitCode === null) {
        await new Promise<void>((resolve) => {
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        });
      }
    }
  }, 120_000);
});
