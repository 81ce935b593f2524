import pino from 'pino';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { memoryRateLimitBackend } from '../../src/http/rate-limit';
import { testConfig, composeTestApp } from '../support/app';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, createUser } from '../support/factories';

/**
 * Responses are validated as they are sent, after the handler's transaction
 * committed. A drift between the code and the contract must fail the test suite (NODE_ENV=test:
 * a 500), never a user's request after their change was saved (development: logged with
 * `contractDrift`, the response sent as made).
 */
async function appWithDrift(nodeEnv: 'test' | 'development') {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'error' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const config = testConfig({ NODE_ENV: nodeEnv, SEED_DEMO: 'false' });
  const app = composeTestApp({ config, knex: testKnex(), logger, rateLimitBackend: memoryRateLimitBackend() });
  await app.services.ready();
  // The drift: the created tontine is answered with a field the contract does not have.
  const tontines = app.services.tontines;
  const create = tontines.create.bind(tontines);
  tontines.create = async (...args: Parameters<typeof create>) => ({ ...(await create(...args)), undocumented: true }) as Awaited<ReturnType<typeof create>>;
  return { app, lines };
}

const BODY = { name: 'Drift circle', currency: 'XOF', contribution_amount: 1000, frequency: 'weekly', max_members: 3, payout_order: 'join_order' };

describe('a response that drifts from the contract after a commit', () => {
  it('fails under NODE_ENV=test (500), so the suite catches it', async () => {
    const { app } = await appWithDrift('test');
    const user = await createUser();
    const res = await request(app).post('/api/tontines').set(bearer(await accessTokenFor(app, user))).send(BODY);
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 500, error: 'InternalError' });
  });

  it('in development is logged as contract drift and answered as committed, not 500', async () => {
    const { app, lines } = await appWithDrift('development');
    const user = await createUser();
    const auth = bearer(await accessTokenFor(app, user));
    const res = await request(app).post('/api/tontines').set(auth).send(BODY);
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ name: 'Drift circle', status: 'forming', undocumented: true });
    expect(lines.filter((line) => line.contractDrift === true)).toEqual([
      expect.objectContaining({ level: 50, method: 'POST', url: '/api/tontines', msg: 'response does not match the contract; sent as is' }),
    ]);
    // The tontine was saved: reading it (no drift there) works.
    expect((await request(app).get(`/api/tontines/${res.body.data.id}`).set(auth)).status).toBe(200);
  });
});
