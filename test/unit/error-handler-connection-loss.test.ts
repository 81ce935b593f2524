import express from 'express';
import pino from 'pino';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { errorHandler } from '../../src/http/error-handler';

/** An app whose one route fails with `error`, answered by the real error handler. */
function failingWith(error: unknown) {
  const app = express();
  app.post('/work', (_req, _res, next) => next(error));
  app.use(errorHandler(pino({ level: 'silent' })));
  return app;
}

describe('errors of a database connection lost under a request', () => {
  it.each([
    ['a terminated backend (57P01)', Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })],
    ['a connection exception (08006)', Object.assign(new Error('connection failure'), { code: '08006' })],
    ['a reset socket', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })],
    ['a client closed under the query', new Error('Connection terminated unexpectedly')],
  ])('%s answers 503 ServiceUnavailable with Retry-After, never 500', async (_name, error) => {
    const res = await request(failingWith(error)).post('/work');
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('2');
    expect(res.body).toMatchObject({ success: false, error: 'ServiceUnavailable' });
    expect(res.body.message).toMatch(/same Idempotency-Key/);
  });

  it('an error of a statement that ran (a constraint) stays a 500 InternalError', async () => {
    const res = await request(failingWith(Object.assign(new Error('duplicate key'), { code: '23505' }))).post('/work');
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ success: false, error: 'InternalError' });
    expect(res.headers['retry-after']).toBeUndefined();
  });
});
