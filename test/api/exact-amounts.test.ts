import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { canonicalDecimal, roundTrips } from '../../src/http/exact-json-numbers';
import { fundWallet } from '../../src/modules/ledger';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, createUser } from '../support/factories';

let app: App;

beforeAll(async () => {
  app = await buildTestApp();
});

describe('numbers as written', () => {
  it('spells one decimal value one way', () => {
    expect(canonicalDecimal('12.50')).toBe(canonicalDecimal('1.25e1'));
    expect(canonicalDecimal('-0012.3400e2')).toBe('-1234e0');
    expect(canonicalDecimal('0.000')).toBe('0');
    expect(canonicalDecimal('100.0000000000000001')).not.toBe(canonicalDecimal('100'));
  });

  it('knows which written numbers a double gives back', () => {
    for (const text of ['0.1', '12.50', '1e3', '100.000000000000000000', '9007199254740991', '-2.5', '0.30000000000000004']) expect(roundTrips(text), text).toBe(true);
    for (const text of ['100.0000000000000001', '9007199254740993', '0.1000000000000000055511151231257827', '1e400', '1e-400']) expect(roundTrips(text), text).toBe(false);
  });
});

describe('amounts are read exactly, whatever JSON.parse would make of them', () => {
  async function sender() {
    const alice = await createUser();
    const bob = await createUser();
    await withTransaction(testKnex(), (trx) => fundWallet(trx, alice.id, 'XOF', 1_000_000n));
    return { auth: bearer(await accessTokenFor(app, alice)), recipient: bob.email };
  }

  const send = (auth: Record<string, string>, raw: string) =>
    request(app).post('/api/transfers').set(auth).set('Idempotency-Key', crypto.randomUUID()).set('Content-Type', 'application/json').send(raw);

  it.each(['100.0000000000000001', '99.99999999999999999', '1e-400', '100.00000000000000000001e0'])('refuses %s XOF with 400 on body.amount', async (amount) => {
    const { auth, recipient } = await sender();
    const res = await send(auth, `{"amount": ${amount}, "currency": "XOF", "recipientIdentifier": "${recipient}"}`);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ success: false, error: 'ValidationError' });
    expect(res.body.details).toEqual([expect.objectContaining({ field: 'body.amount' })]);
  });

  it('accepts the same amount written exactly (control case: 100.000 and 1e2 are 100)', async () => {
    const { auth, recipient } = await sender();
    for (const amount of ['100.000', '1e2']) {
      const res = await send(auth, `{"amount": ${amount}, "currency": "XOF", "recipientIdentifier": "${recipient}"}`);
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.amount_minor).toBe('100');
    }
  });
});

describe('a number built to cost time is refused before it costs any', () => {
  // 1.000…0001 within the 100 KB body limit: the zeros scanned from every start (a `/0+$/`)
  // take 5.3 s of one process's only thread; counted once and capped, a few milliseconds.
  const adversarial = `1.${'0'.repeat(100 * 1024 - 64)}1`;

  it('spells a long run of inner zeros in one pass, exactly', () => {
    expect(canonicalDecimal(`1.${'0'.repeat(5)}1`)).toBe('1000001e-6');
    expect(canonicalDecimal(`1${'0'.repeat(7)}`)).toBe('1e7');
    expect(canonicalDecimal(`-${'0'.repeat(3)}25${'0'.repeat(4)}.0`)).toBe('-25e4');
    const started = process.hrtime.bigint();
    expect(canonicalDecimal(adversarial)).toBe(`1${'0'.repeat(adversarial.length - 3)}1e-${adversarial.length - 2}`);
    // Generous for a loaded CI machine: a quadratic scan takes thousands of milliseconds here.
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(250);
  });

  it('answers 400 on the field for a 100 KB number, without reading its digits', async () => {
    const started = process.hrtime.bigint();
    const res = await request(app).post('/api/auth/login').set('Content-Type', 'application/json').send(`{"identifier":"a@b.example","password":${adversarial}}`);
    const elapsedMs = Number(process.hrtime.bigint() - started) / 1e6;
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ success: false, error: 'ValidationError' });
    expect(res.body.details).toEqual([{ field: 'body.password', message: expect.stringMatching(/characters long: send at most 40/) }]);
    expect(res.text.length).toBeLessThan(1_000);
    expect(elapsedMs).toBeLessThan(1_000);
  });

  it('never reads the body of a request outside /api', async () => {
    const res = await request(app).post('/nowhere').set('Content-Type', 'application/json').send('{"amount": 1.0001');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ success: false, error: 'NotFound' });
  });

  it('counts an anonymous caller before it reads the body (over the limit: 429, not 400)', async () => {
    const limited = await buildTestApp({ env: { RATE_LIMIT_ANONYMOUS: '1' } });
    const first = await request(limited).post('/api/auth/login').set('Content-Type', 'application/json').send('{"identifier": ');
    expect(first.status).toBe(400);
    const second = await request(limited).post('/api/auth/login').set('Content-Type', 'application/json').send('{"identifier": ');
    expect(second.status).toBe(429);
    expect(second.body).toMatchObject({ success: false, error: 'RateLimitExceeded' });
  });
});
