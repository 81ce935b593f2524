import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { cryptoCaller } from '../support/crypto';
import { testKnex } from '../support/database';

const EVM = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
const TRON = 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t';
const SOLANA = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';

let app: App;
beforeAll(async () => {
  app = await buildTestApp();
});

describe('POST /crypto/withdrawal-addresses', () => {
  it.each([
    ['USDC', 'ethereum', EVM],
    ['USDC', 'base', EVM],
    ['USDT', 'tron', TRON],
    ['USDC', 'solana', SOLANA],
  ])('adds %s on %s, pending for 24 hours', async (asset, network, address) => {
    const caller = await cryptoCaller(app);
    const res = await request(app).post('/api/crypto/withdrawal-addresses').set(caller.auth).send({ asset, network, address, label: 'Cold wallet' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data).toMatchObject({ object: 'crypto_withdrawal_address', asset, network, address, label: 'Cold wallet', memo: null, status: 'pending' });
    expect(new Date(res.body.data.active_at).getTime() - new Date(res.body.data.created_at).getTime()).toBe(86_400_000);
  });

  it('writes an all-lower-case EVM address in EIP-55', async () => {
    const caller = await cryptoCaller(app);
    const res = await request(app).post('/api/crypto/withdrawal-addresses').set(caller.auth).send({ asset: 'USDC', network: 'ethereum', address: EVM.toLowerCase(), label: 'Exchange' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data.address).toBe(EVM);
  });

  it.each([
    ['ethereum', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD', 'bad_checksum'],
    ['tron', 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u', 'bad_checksum'],
    ['ethereum', TRON, 'wrong_network'],
    ['tron', TRON.slice(0, 30), 'wrong_length'],
    ['solana', EVM.slice(2), 'malformed'],
    ['solana', SOLANA.slice(0, 30), 'wrong_length'],
  ])('refuses on %s the address %s with 422 InvalidAddress (%s), adding nothing', async (network, address, reason) => {
    const caller = await cryptoCaller(app);
    const res = await request(app).post('/api/crypto/withdrawal-addresses').set(caller.auth).send({ asset: 'USDC', network, address, label: 'Typo' });
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body).toMatchObject({ success: false, error: 'InvalidAddress', details: { network, reason } });
    const list = await request(app).get('/api/crypto/withdrawal-addresses').set(caller.auth);
    expect(list.body.data.data).toEqual([]);
  });

  it('refuses an asset the network does not carry (USDT on base) with 400', async () => {
    const caller = await cryptoCaller(app);
    const res = await request(app).post('/api/crypto/withdrawal-addresses').set(caller.auth).send({ asset: 'USDT', network: 'base', address: EVM, label: 'Base' });
    expect(res.status).toBe(400);
  });

  it('refuses a user below tier_2 with 403 VerificationRequired', async () => {
    const caller = await cryptoCaller(app, {}, 'tier_1');
    const res = await request(app).post('/api/crypto/withdrawal-addresses').set(caller.auth).send({ asset: 'USDC', network: 'ethereum', address: EVM, label: 'Mine' });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('VerificationRequired');
  });

  it('tells the owner an address was added, with when it becomes usable', async () => {
    const caller = await cryptoCaller(app);
    const to = caller.user.email ?? caller.user.phone;
    const res = await request(app).post('/api/crypto/withdrawal-addresses').set(caller.auth).send({ asset: 'USDT', network: 'tron', address: TRON, label: 'Savings' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const outbox = await request(app).get('/api/test-helpers/outbox').query({ to });
    const message = (outbox.body.data.data as Array<{ template: string; body: string }>).find((m) => m.template === 'crypto_withdrawal_address_added');
    expect(message?.body).toContain(res.body.data.active_at.slice(0, 10));
  });
});

describe('GET /crypto/withdrawal-addresses', () => {
  it("lists the caller's own addresses, newest first, active once active_at has passed", async () => {
    const caller = await cryptoCaller(app);
    const other = await cryptoCaller(app);
    for (const [network, address] of [['tron', TRON], ['solana', SOLANA]]) {
      const res = await request(app).post('/api/crypto/withdrawal-addresses').set(caller.auth).send({ asset: 'USDT', network, address, label: network });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
    await request(app).post('/api/crypto/withdrawal-addresses').set(other.auth).send({ asset: 'USDC', network: 'ethereum', address: EVM, label: 'theirs' });
    await testKnex()('crypto_withdrawal_addresses').where({ user_id: caller.user.id, network: 'tron' }).update({ active_at: new Date(Date.now() - 1000) });
    const res = await request(app).get('/api/crypto/withdrawal-addresses').set(caller.auth);
    expect(res.status).toBe(200);
    expect(res.body.data.data.map((a: { network: string; status: string }) => [a.network, a.status])).toEqual([
      ['solana', 'pending'],
      ['tron', 'active'],
    ]);
  });
});
