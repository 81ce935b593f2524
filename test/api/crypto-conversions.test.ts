import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { cryptoCaller } from '../support/crypto';
import { testKnex } from '../support/database';
import { walletBalance, type TestCaller } from '../support/factories';
import { expectLedgerInvariants, postingEntries } from '../support/ledger-invariants';

let app: App;
let clockOffsetMs = 0;
beforeAll(async () => {
  app = await buildTestApp({ now: () => new Date(Date.now() + clockOffsetMs) });
});

async function quote(caller: TestCaller, body: object) {
  return request(app).post('/api/crypto/quotes').set(caller.auth).send(body);
}

async function convert(caller: TestCaller, quoteId: string, key: string = crypto.randomUUID()) {
  return request(app).post('/api/crypto/conversions').set(caller.auth).set('Idempotency-Key', key).send({ quote_id: quoteId });
}

describe('POST /crypto/quotes', () => {
  it('quotes USDC to XOF from what is paid: the fee in USDC, the rest converted at the sandbox rate and rounded down, good for 30 seconds', async () => {
    const caller = await cryptoCaller(app);
    const res = await quote(caller, { from_currency: 'USDC', to_currency: 'XOF', from_amount: '100' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    // 1 USDC = 1 USD = 1/1.08 EUR = 655.957/1.08 XOF; 0.5 % fee.
    expect(res.body.data).toMatchObject({
      object: 'crypto_quote',
      from_currency: 'USDC',
      to_currency: 'XOF',
      from_amount: '100.000000',
      from_amount_minor: '100000000',
      fee: '0.500000',
      fee_minor: '500000',
      to_amount: '60433',
      to_amount_minor: '60433',
      rate: '607.3675925925',
    });
    expect(new Date(res.body.data.expires_at).getTime() - new Date(res.body.data.created_at).getTime()).toBe(30_000);
  });

  it('quotes from what is received: the least amount that yields it, XOF to EUR at the fixed parity', async () => {
    const caller = await cryptoCaller(app);
    const res = await quote(caller, { from_currency: 'XOF', to_currency: 'EUR', to_amount: '10' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data).toMatchObject({ to_amount_minor: '1000', from_amount_minor: '6593', fee_minor: '33', rate: '0.0015244901' });
    // What is converted (6560 XOF) gives at least 10.00 EUR, one franc less would not.
    expect((6560n * 1000n * 100n) / 655957n).toBe(1000n);
    expect((6559n * 1000n * 100n) / 655957n).toBe(999n);
  });

  it('refuses both amounts, neither, one currency twice, and an amount that converts to nothing', async () => {
    const caller = await cryptoCaller(app);
    expect((await quote(caller, { from_currency: 'USDC', to_currency: 'XOF', from_amount: '1', to_amount: '1' })).status).toBe(400);
    expect((await quote(caller, { from_currency: 'USDC', to_currency: 'XOF' })).status).toBe(400);
    expect((await quote(caller, { from_currency: 'USDC', to_currency: 'USDC', from_amount: '1' })).status).toBe(400);
    expect((await quote(caller, { from_currency: 'XOF', to_currency: 'XOF', from_amount: '1' })).status).toBe(400);
    // One franc is all fee (the fee rounds up to a whole franc).
    const franc = await quote(caller, { from_currency: 'XOF', to_currency: 'USDC', from_amount: '1' });
    expect(franc.status).toBe(422);
    expect(franc.body.error).toBe('AmountTooSmall');
    const nothing = await quote(caller, { from_currency: 'USDC', to_currency: 'XOF', from_amount: '0.000001' });
    expect(nothing.status).toBe(422);
    expect(nothing.body.error).toBe('AmountTooSmall');
  });

  it('is refused below tier_2 with 403 VerificationRequired', async () => {
    const caller = await cryptoCaller(app, {}, 'tier_1');
    const res = await quote(caller, { from_currency: 'EUR', to_currency: 'USDC', from_amount: '10' });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: 'VerificationRequired', details: { required_tier: 'tier_2', tier: 'tier_1' } });
  });
});

describe('POST /crypto/conversions', () => {
  it('executes the quote as one posting through the liquidity accounts, balanced in each currency', async () => {
    const caller = await cryptoCaller(app, { USDC: 150_000_000n });
    const quoted = (await quote(caller, { from_currency: 'USDC', to_currency: 'XOF', from_amount: '100' })).body.data;
    const res = await convert(caller, quoted.id);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data).toMatchObject({ object: 'crypto_conversion', quote_id: quoted.id, status: 'completed', from_amount_minor: '100000000', to_amount_minor: '60433', fee_minor: '500000' });
    expect(await walletBalance(caller.user.id, 'USDC')).toBe(50_000_000n);
    expect(await walletBalance(caller.user.id, 'XOF')).toBe(60_433n);
    const entries = await postingEntries(testKnex(), 'crypto.conversion', res.body.data.id);
    const sums = new Map<string, bigint>();
    for (const entry of entries) sums.set(entry.currency, (sums.get(entry.currency) ?? 0n) + entry.amount);
    expect(Object.fromEntries(sums)).toEqual({ USDC: 0n, XOF: 0n });
    expect(entries).toHaveLength(5);
    const got = await request(app).get(`/api/crypto/conversions/${res.body.data.id}`).set(caller.auth);
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(res.body.data);
    const events = await request(app).get('/api/events').set(caller.auth);
    expect(events.body.data.data).toContainEqual(expect.objectContaining({ type: 'crypto.conversion.completed', object_id: res.body.data.id, sequence: 1 }));
    await expectLedgerInvariants(testKnex());
  });

  it('a quote is used once: the same key answers the replay, another key 409 QuoteAlreadyUsed, and money moved once', async () => {
    const caller = await cryptoCaller(app, { EUR: 100_00n });
    const quoted = (await quote(caller, { from_currency: 'EUR', to_currency: 'USDT', from_amount: '50' })).body.data;
    const key = crypto.randomUUID();
    const first = await convert(caller, quoted.id, key);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const replay = await convert(caller, quoted.id, key);
    expect(replay.status).toBe(409);
    expect(replay.body).toMatchObject({ error: 'IdempotencyKeyAlreadyProcessed', details: { resource_type: 'crypto_conversion', resource_id: first.body.data.id } });
    const again = await convert(caller, quoted.id);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: 'QuoteAlreadyUsed', details: { conversion_id: first.body.data.id } });
    expect(await walletBalance(caller.user.id, 'EUR')).toBe(50_00n);
    expect(await walletBalance(caller.user.id, 'USDT')).toBe(BigInt(first.body.data.to_amount_minor));
  });

  it('two conversions of one quote at once: one converts, the other is refused', async () => {
    const caller = await cryptoCaller(app, { USD: 1_000_00n });
    const quoted = (await quote(caller, { from_currency: 'USD', to_currency: 'USDC', from_amount: '100' })).body.data;
    const answers = await Promise.all([convert(caller, quoted.id), convert(caller, quoted.id)]);
    expect(answers.map((res) => res.status).sort()).toEqual([201, 409]);
    expect(await walletBalance(caller.user.id, 'USD')).toBe(900_00n);
    expect(await testKnex()('crypto_conversions').where({ quote_id: quoted.id })).toHaveLength(1);
  });

  it('a quote used after its 30 seconds answers 409 QuoteExpired and moves nothing', async () => {
    const caller = await cryptoCaller(app, { USDC: 10_000_000n });
    const quoted = (await quote(caller, { from_currency: 'USDC', to_currency: 'EUR', from_amount: '10' })).body.data;
    clockOffsetMs = 30_000;
    try {
      const res = await convert(caller, quoted.id);
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ error: 'QuoteExpired', details: { expires_at: quoted.expires_at } });
    } finally {
      clockOffsetMs = 0;
    }
    expect(await walletBalance(caller.user.id, 'USDC')).toBe(10_000_000n);
    expect(await walletBalance(caller.user.id, 'EUR')).toBe(0n);
  });

  it('a wallet that does not cover the quote answers 422 InsufficientFunds and leaves the quote unused', async () => {
    const caller = await cryptoCaller(app, { USDT: 1_000_000n });
    const quoted = (await quote(caller, { from_currency: 'USDT', to_currency: 'XOF', from_amount: '2' })).body.data;
    const refused = await convert(caller, quoted.id);
    expect(refused.status, JSON.stringify(refused.body)).toBe(422);
    expect(refused.body.details).toMatchObject({ currency: 'USDT', available: '1.000000', required: '2.000000' });
    expect(refused.body.error).toBe('InsufficientFunds');
    expect((await testKnex()('crypto_quotes').where({ id: quoted.id }).first()).used_at).toBeNull();
  });

  it("another user's quote answers 404 QuoteNotFound", async () => {
    const owner = await cryptoCaller(app, { USDC: 5_000_000n });
    const quoted = (await quote(owner, { from_currency: 'USDC', to_currency: 'EUR', from_amount: '1' })).body.data;
    const stranger = await cryptoCaller(app, { USDC: 5_000_000n });
    const res = await convert(stranger, quoted.id);
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('QuoteNotFound');
  });
});
