import express from 'express';
import pino from 'pino';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { CommitOutcomeUnknownError } from '../../src/db/transaction';
import { NoSuitableHostError } from '../../src/db/multi-host';
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
    ['a write refused by a server that became read-only (25006)', Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006' })],
    ['a standby\'s recovery conflict (40001)', Object.assign(new Error('canceling statement due to conflict with recovery'), { code: '40001' })],
    ['no host of a multi-host URL accepting writes (08001)', new NoSuitableHostError(['127.0.0.1:5432 is read-only, not read-write'])],
    ['a COMMIT released with the synchronous-replication warning (08007, outcome unknown)', new CommitOutcomeUnknownError('canceling wait for synchronous replication due to user request')],
  ])('%s answers 503 ServiceUnavailable with Retry-After, never 500', async (_name, error) => {
    const res = await request(failingWith(error)).post('/work');
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('2');
    expect(res.body).toMatchObject({ success: false, error: 'ServiceUnavailable' });
    expect(res.body.message).toMatch(/same Idempotency-Key/);
  });

  it('a serialization failure that is no recovery conflict is not taken for a failover', async () => {
    const res = await request(failingWith(Object.assign(new Error('could not serialize access due to concurrent update'), { code: '40001' }))).post('/work');
    expect(res.status).toBe(500);
  });

  it('an error of a statement that ran (a constraint) stays a 500 InternalError', async () => {
    const res = await request(failingWith(Object.assign(new Error('duplicate key'), { code: '23505' }))).post('/work');
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ success: false, error: 'InternalError' });
    expect(res.headers['retry-after']).toBeUndefined();
  });
});
