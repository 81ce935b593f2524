import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { createCaller, type TestCaller } from '../support/factories';
import { TONTINE_BODY } from '../support/tontines';

/** JSON is UTF-8; another charset is 415 UnsupportedMediaType in the error envelope, never the body parser's 403 "Unknown encoding". */
let app: App;
let caller: TestCaller;
beforeAll(async () => {
  app = await buildTestApp();
  caller = await createCaller(app);
});

const json = JSON.stringify(TONTINE_BODY);
/** The bytes as given (superagent would otherwise serialise a Buffer as JSON). */
const raw = (body: unknown) => body as string;

describe('the charset of a JSON body', () => {
  it.each([
    ['utf-16', Buffer.from(json, 'utf16le')],
    ['UTF-16LE', Buffer.from(json, 'utf16le')],
    ['utf-32', Buffer.from(json, 'utf8')],
    ['latin1', Buffer.from(json, 'latin1')],
  ])('charset=%s answers 415 UnsupportedMediaType and creates nothing', async (charset, body) => {
    const res = await request(app).post('/api/tontines').set(caller.auth).set('Content-Type', `application/json; charset=${charset}`).serialize(raw).send(body);
    expect(res.status).toBe(415);
    expect(res.body).toEqual({
      success: false,
      error: 'UnsupportedMediaType',
      message: `The charset "${charset.toLowerCase()}" is not supported: send JSON in UTF-8 (application/json, or application/json; charset=utf-8).`,
    });
    const mine = await request(app).get('/api/tontines').set(caller.auth).expect(200);
    expect(mine.body.data.data).toEqual([]);
  });

  it('UTF-8, named or not, is read', async () => {
    for (const type of ['application/json', 'application/json; charset=utf-8', 'application/json; charset=UTF-8']) {
      const res = await request(app).post('/api/tontines').set(caller.auth).set('Content-Type', type).serialize(raw).send(Buffer.from(json, 'utf8'));
      expect({ type, status: res.status, body: res.status === 201 ? null : res.body }).toEqual({ type, status: 201, body: null });
    }
  });
});
