import { Writable } from 'node:stream';
import pino from 'pino';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { memoryRateLimitBackend } from '../../src/http/rate-limit';
import { createLogger, resolvedLogFormat } from '../../src/logger';
import { testConfig, composeTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, createUser } from '../support/factories';
import { until } from '../support/jobs';

function captured(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, stream };
}

let app: App;
const log = captured();

beforeAll(async () => {
  const config = testConfig({ LOG_LEVEL: 'info' });
  app = composeTestApp({ config, knex: testKnex(), logger: pino({ level: 'info' }, log.stream), rateLimitBackend: memoryRateLimitBackend() });
  await app.services.ready();
});

describe('request log lines', () => {
  it('carry the status but not the response headers, and stay short', async () => {
    const token = await accessTokenFor(app, await createUser());
    const res = await request(app).get('/api/me').set(bearer(token)).set('X-Request-Id', 'request-log-me-1');
    expect(res.status).toBe(200);
    expect(res.headers['content-security-policy']).toContain("default-src 'self'");
    const line = log.lines.find((l) => l.includes('request-log-me-1') && l.includes('"res"'));
    expect(line).toBeDefined();
    const parsed = JSON.parse(line as string) as { res: Record<string, unknown>; req: { id: string } };
    expect(parsed.res).toEqual({ statusCode: 200 });
    expect(line).not.toMatch(/content-security-policy|strict-transport-security|cross-origin/i);
    expect((line as string).length).toBeLessThan(1_200);
  });
});

describe('the process logger', () => {
  it('writes human-readable lines when LOG_FORMAT=pretty, JSON lines otherwise', async () => {
    const pretty = captured();
    createLogger({ logLevel: 'info', logFormat: 'pretty', nodeEnv: 'development' }, pretty.stream).info({ apiPort: 8080 }, 'listening');
    const json = captured();
    createLogger({ logLevel: 'info', logFormat: 'json', nodeEnv: 'development' }, json.stream).info({ apiPort: 8080 }, 'listening');
    // The pretty transport writes asynchronously: its line arrives a moment later.
    await until(() => pretty.lines.length > 0 && json.lines.length > 0, 5_000);
    expect(pretty.lines.join('\n')).toMatch(/INFO.*listening.*apiPort.*8080/);
    expect(() => JSON.parse(pretty.lines[0] as string)).toThrow();
    expect(JSON.parse(json.lines[0] as string)).toMatchObject({ msg: 'listening', apiPort: 8080 });
  });

  it('is pretty by default only in development at a terminal', () => {
    expect(resolvedLogFormat({ logFormat: 'auto', nodeEnv: 'development' }, true)).toBe('pretty');
    expect(resolvedLogFormat({ logFormat: 'auto', nodeEnv: 'development' }, false)).toBe('json');
    expect(resolvedLogFormat({ logFormat: 'auto', nodeEnv: 'production' }, true)).toBe('json');
    expect(resolvedLogFormat({ logFormat: 'pretty', nodeEnv: 'production' }, false)).toBe('json');
    expect(testConfig({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
  });
});
