import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { buildTestApp, type App } from '../support/app';
import { createApiKey } from '../support/api-keys';
import { testKnex } from '../support/database';
import { createOrganization, uniqueEmail, uniquePhone } from '../support/factories';

let app: App;

beforeAll(async () => {
  app = await buildTestApp();
});

async function send(to: string, template: string, body: string, channel: 'sms' | 'email' = to.includes('@') ? 'email' : 'sms'): Promise<void> {
  await withTransaction(testKnex(), (trx) => app.services.notifier.send(trx, { to, channel, template, body }));
}

describe('GET /test-helpers/outbox (outside production)', () => {
  it('lists the messages the sandbox notifier kept for one recipient, newest first, and no one else’s', async () => {
    const phone = uniquePhone();
    await send(phone, 'first', 'one');
    await send(phone, 'second', 'two');
    await send(uniquePhone(), 'other', 'not yours');

    // The recipient is read as any identifier: spaces and a 00 prefix name the same number.
    const spaced = `00${phone.slice(1, 4)} ${phone.slice(4, 8)} ${phone.slice(8)}`;
    const res = await request(app).get('/api/test-helpers/outbox').query({ to: spaced });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.object).toBe('list');
    expect(res.body.data.data.map((m: { template: string }) => m.template)).toEqual(['second', 'first']);
    expect(res.body.data.data[0]).toMatchObject({ to: phone, channel: 'sms', template: 'second', body: 'two' });
    expect(Date.parse(res.body.data.data[0].created_at)).not.toBeNaN();
  });

  it('reads an unencoded + in the query string (decoded as a space) as the + of a telephone number', async () => {
    const phone = uniquePhone();
    await send(phone, 'raw', 'plus sign');
    const res = await request(app).get(`/api/test-helpers/outbox?to=${phone}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.data).toHaveLength(1);
    expect(res.body.data.data[0]).toMatchObject({ to: phone, template: 'raw' });
    const encoded = await request(app).get(`/api/test-helpers/outbox?to=${encodeURIComponent(phone)}`);
    expect(encoded.body.data.data.map((m: { template: string }) => m.template)).toEqual(['raw']);
  });

  it('pages with limit and starting_after', async () => {
    const email = uniqueEmail('pages');
    for (const template of ['a', 'b', 'c']) await send(email, template, template);
    const first = await request(app).get('/api/test-helpers/outbox').query({ to: email.toUpperCase(), limit: 2 });
    expect(first.body.data.data.map((m: { template: string }) => m.template)).toEqual(['c', 'b']);
    expect(first.body.data.has_more).toBe(true);
    const second = await request(app).get('/api/test-helpers/outbox').query({ to: email, limit: 2, starting_after: first.body.data.next_cursor });
    expect(second.body.data.data.map((m: { template: string }) => m.template)).toEqual(['a']);
    expect(second.body.data.has_more).toBe(false);
  });

  it('keeps no message of a transaction that rolled back', async () => {
    const email = uniqueEmail('rollback');
    await expect(
      withTransaction(testKnex(), async (trx) => {
        await app.services.notifier.send(trx, { to: email, channel: 'email', template: 'lost', body: 'never sent' });
        throw new Error('the change fails after sending');
      }),
    ).rejects.toThrow('the change fails');
    const res = await request(app).get('/api/test-helpers/outbox').query({ to: email });
    expect(res.body.data.data).toEqual([]);
  });

  it('refuses a recipient that is neither an e-mail address nor a telephone number (400)', async () => {
    const res = await request(app).get('/api/test-helpers/outbox').query({ to: 'nobody' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('ValidationError');
  });

  it('needs no authentication, and a test API key may call it too', async () => {
    const { secret } = await createApiKey(app, await createOrganization(), ['payments:read']);
    const email = uniqueEmail('ci');
    await send(email, 'ci', 'read by a partner CI');
    const res = await request(app).get('/api/test-helpers/outbox').query({ to: email }).set('Authorization', `Bearer ${secret}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.data).toHaveLength(1);
  });

  it('never answers a live API key (404, as if the route did not exist)', async () => {
    const res = await request(app).get('/api/test-helpers/outbox').query({ to: uniqueEmail() }).set('Authorization', `Bearer sk_live_${'a'.repeat(12)}_${'b'.repeat(32)}cccccc`);
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('NotFound');
  });
});

describe('test helpers in production', () => {
  it('answer 404 like an unknown path, before the contract would check their input', async () => {
    const production = await buildTestApp({ config: { nodeEnv: 'production' } });
    const email = uniqueEmail('prod');
    await withTransaction(testKnex(), (trx) => production.services.notifier.send(trx, { to: email, channel: 'email', template: 't', body: 'kept, never shown' }));
    for (const query of [{ to: email }, {}, { to: 'not an identifier', limit: 0 }]) {
      const res = await request(production).get('/api/test-helpers/outbox').query(query);
      expect(res.status, JSON.stringify(query)).toBe(404);
      expect(res.body).toMatchObject({ success: false, error: 'NotFound' });
      expect(JSON.stringify(res.body)).not.toContain('kept, never shown');
    }
    // The same app outside production answers (the mode alone decides).
    expect((await request(app).get('/api/test-helpers/outbox').query({ to: email })).status).toBe(200);
  });
});
