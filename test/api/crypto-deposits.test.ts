import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { isValidAddress, type TransferObservation } from '../../src/modules/crypto';
import { buildTestApp, type App } from '../support/app';
import { cryptoCaller } from '../support/crypto';
import { testKnex } from '../support/database';
import { walletBalance, type TestCaller } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';

let app: App;
beforeAll(async () => {
  app = await buildTestApp();
});

async function addressOf(caller: TestCaller, asset: string, network: string): Promise<string> {
  const res = await request(app).post('/api/crypto/deposit-addresses').set(caller.auth).send({ asset, network });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.address as string;
}

async function send(network: string, address: string, asset: string, amount: string) {
  const res = await request(app).post(`/api/test-helpers/crypto/networks/${network}/deposits`).send({ address, asset, amount });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data as { id: string; status: string; tx_hash: string; confirmations: number };
}

async function mine(network: string, count: number, reorgDepth?: number) {
  const res = await request(app).post(`/api/test-helpers/crypto/networks/${network}/blocks`).send({ count, ...(reorgDepth === undefined ? {} : { reorg_depth: reorgDepth }) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as { height: number };
}

async function deposit(caller: TestCaller, id: string) {
  const res = await request(app).get(`/api/crypto/deposits/${id}`).set(caller.auth);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as { status: string; confirmations: number; confirmations_required: number; amount: string; amount_minor: string };
}

async function creditPostings(depositId: string): Promise<number> {
  return Number(((await testKnex()('postings').where({ kind: 'crypto.deposit', reference: depositId }).count('* as n').first()) as { n: string }).n);
}

describe('GET /crypto/assets', () => {
  it('lists USDC and USDT with exponent 6 and each network with its confirmations and address format', async () => {
    const caller = await cryptoCaller(app, {}, 'tier_0');
    const res = await request(app).get('/api/crypto/assets').set(caller.auth);
    expect(res.status).toBe(200);
    const usdc = res.body.data.data.find((asset: { code: string }) => asset.code === 'USDC');
    expect(usdc).toMatchObject({ exponent: 6 });
    expect(usdc.networks.map((n: { code: string }) => n.code)).toEqual(['ethereum', 'tron', 'solana', 'base']);
    expect(usdc.networks.find((n: { code: string }) => n.code === 'tron')).toEqual({ code: 'tron', name: 'TRON', address_format: 'tron', confirmations: 20, memo_required: false, withdrawal_fee: '1' });
    const usdt = res.body.data.data.find((asset: { code: string }) => asset.code === 'USDT');
    expect(usdt.networks.map((n: { code: string }) => n.code)).not.toContain('base');
  });
});

describe('who may use crypto', () => {
  it.each(['tier_0', 'tier_1'] as const)('a %s user is refused with 403 VerificationRequired naming tier_2', async (tier) => {
    const caller = await cryptoCaller(app, {}, tier);
    for (const res of [
      await request(app).post('/api/crypto/deposit-addresses').set(caller.auth).send({ asset: 'USDC', network: 'ethereum' }),
      await request(app).get('/api/crypto/deposits').set(caller.auth),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ error: 'VerificationRequired', details: { required_tier: 'tier_2', tier } });
    }
    expect(await testKnex()('crypto_deposit_addresses').where({ user_id: caller.user.id }).first()).toBeUndefined();
  });
});

describe('POST /crypto/deposit-addresses', () => {
  it('answers one address per user, asset and network, the same on a second call, written as each network writes them', async () => {
    const caller = await cryptoCaller(app);
    const formats = { ethereum: 'evm', base: 'evm', tron: 'tron', solana: 'solana' } as const;
    const seen = new Set<string>();
    for (const [network, format] of Object.entries(formats)) {
      const address = await addressOf(caller, 'USDC', network);
      expect(await addressOf(caller, 'USDC', network)).toBe(address);
      expect(isValidAddress(format, address), `${network} ${address}`).toBe(true);
      seen.add(address);
    }
    expect(seen.size).toBe(4);
    expect(await addressOf(caller, 'USDC', 'tron')).toMatch(/^T/);
    expect(await addressOf(caller, 'USDT', 'tron')).not.toBe(await addressOf(caller, 'USDC', 'tron'));
    const other = await cryptoCaller(app);
    expect(await addressOf(other, 'USDC', 'tron')).not.toBe(await addressOf(caller, 'USDC', 'tron'));
    expect(await testKnex()('crypto_deposit_addresses').where({ user_id: caller.user.id })).toHaveLength(5);
  });

  it('refuses an asset the network does not carry (USDT on base) with 400', async () => {
    const caller = await cryptoCaller(app);
    const res = await request(app).post('/api/crypto/deposit-addresses').set(caller.auth).send({ asset: 'USDT', network: 'base' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('ValidationError');
  });

  it('with an Idempotency-Key, a retry answers 409 IdempotencyKeyAlreadyProcessed naming the address', async () => {
    const caller = await cryptoCaller(app);
    const key = crypto.randomUUID();
    const post = () => request(app).post('/api/crypto/deposit-addresses').set(caller.auth).set('Idempotency-Key', key).send({ asset: 'USDC', network: 'base' });
    const first = await post();
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const retry = await post();
    expect(retry.status).toBe(409);
    expect(retry.body).toMatchObject({ error: 'IdempotencyKeyAlreadyProcessed', details: { resource_type: 'crypto_deposit_address', resource_id: first.body.data.id } });
  });

  it('gives one address to two first calls at once', async () => {
    const caller = await cryptoCaller(app);
    const answers = await Promise.all([1, 2, 3].map(() => request(app).post('/api/crypto/deposit-addresses').set(caller.auth).send({ asset: 'USDC', network: 'solana' })));
    expect(answers.map((res) => res.status)).toEqual([201, 201, 201]);
    expect(new Set(answers.map((res) => res.body.data.id)).size).toBe(1);
  });
});

describe('deposits through the network simulator', () => {
  it('detected, confirming n of N, then completed and credited once; GET /wallets shows the stablecoin wallet', async () => {
    const caller = await cryptoCaller(app);
    const address = await addressOf(caller, 'USDT', 'tron');
    const sent = await send('tron', address, 'USDT', '250');
    expect(sent).toMatchObject({ status: 'detected', confirmations: 0 });
    await mine('tron', 5);
    expect(await deposit(caller, sent.id)).toMatchObject({ status: 'confirming', confirmations: 5, confirmations_required: 20 });
    expect(await walletBalance(caller.user.id, 'USDT')).toBe(0n);
    await mine('tron', 15);
    expect(await deposit(caller, sent.id)).toMatchObject({ status: 'completed', confirmations: 20, amount: '250.000000', amount_minor: '250000000' });
    await mine('tron', 10);
    expect(await walletBalance(caller.user.id, 'USDT')).toBe(250_000_000n);
    expect(await creditPostings(sent.id)).toBe(1);
    const wallets = await request(app).get('/api/wallets').set(caller.auth);
    expect(wallets.status).toBe(200);
    expect(wallets.body.data.data).toContainEqual(expect.objectContaining({ currency: 'USDT', currency_exponent: 6, balance: '250.000000', balance_minor: '250000000' }));
    const list = await request(app).get('/api/crypto/deposits').set(caller.auth);
    expect(list.body.data.data.map((d: { id: string }) => d.id)).toEqual([sent.id]);
    const events = await request(app).get('/api/events').set(caller.auth);
    const mine_ = (events.body.data.data as Array<{ type: string; object_id: string; sequence: number }>).filter((e) => e.object_id === sent.id);
    expect(mine_.map((e) => [e.type, e.sequence]).sort((a, b) => Number(a[1]) - Number(b[1]))).toEqual([
      ['crypto.deposit.detected', 1],
      ['crypto.deposit.confirming', 2],
      ['crypto.deposit.completed', 3],
    ]);
    await expectLedgerInvariants(testKnex());
  });

  it('a reorganisation before finality reverses the deposit: never credited, whatever is mined after', async () => {
    const caller = await cryptoCaller(app);
    const address = await addressOf(caller, 'USDC', 'ethereum');
    const sent = await send('ethereum', address, 'USDC', '10.5');
    await mine('ethereum', 3);
    expect(await deposit(caller, sent.id)).toMatchObject({ status: 'confirming', confirmations: 3 });
    await mine('ethereum', 1, 3);
    expect(await deposit(caller, sent.id)).toMatchObject({ status: 'reversed' });
    await mine('ethereum', 30);
    expect(await deposit(caller, sent.id)).toMatchObject({ status: 'reversed' });
    expect(await walletBalance(caller.user.id, 'USDC')).toBe(0n);
    expect(await creditPostings(sent.id)).toBe(0);
  });

  it('a reorganisation after finality leaves the deposit completed and credited once', async () => {
    const caller = await cryptoCaller(app);
    const address = await addressOf(caller, 'USDC', 'base');
    const sent = await send('base', address, 'USDC', '7');
    await mine('base', 12);
    expect(await deposit(caller, sent.id)).toMatchObject({ status: 'completed' });
    await mine('base', 2, 13);
    expect(await deposit(caller, sent.id)).toMatchObject({ status: 'completed' });
    expect(await walletBalance(caller.user.id, 'USDC')).toBe(7_000_000n);
    expect(await creditPostings(sent.id)).toBe(1);
  });

  it('an asset sent to an address of the other asset makes a failed deposit, not credited', async () => {
    const caller = await cryptoCaller(app);
    const address = await addressOf(caller, 'USDT', 'solana');
    const sent = await send('solana', address, 'USDC', '3');
    expect(sent).toMatchObject({ status: 'failed' });
    await mine('solana', 40);
    expect(await deposit(caller, sent.id)).toMatchObject({ status: 'failed' });
    expect(await walletBalance(caller.user.id, 'USDC')).toBe(0n);
    expect(await walletBalance(caller.user.id, 'USDT')).toBe(0n);
  });

  it('a transfer to an address that is not the platform\'s is refused by the helper with 404 DepositAddressNotFound', async () => {
    const res = await request(app).post('/api/test-helpers/crypto/networks/tron/deposits').send({ address: 'TJRabPrwbZy45sbavfcjinPJC18kjpRTv8', asset: 'USDT', amount: '1' });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('DepositAddressNotFound');
  });

  it("another user's deposit answers 404 CryptoDepositNotFound", async () => {
    const owner = await cryptoCaller(app);
    const sent = await send('tron', await addressOf(owner, 'USDT', 'tron'), 'USDT', '1');
    const stranger = await cryptoCaller(app);
    const res = await request(app).get(`/api/crypto/deposits/${sent.id}`).set(stranger.auth);
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('CryptoDepositNotFound');
  });
});

describe('what the network reports, in any order and as often as it likes', () => {
  async function observed(caller: TestCaller, amountMinor: bigint): Promise<(confirmations: number, dropped?: boolean) => TransferObservation> {
    const address = await addressOf(caller, 'USDC', 'ethereum');
    const txHash = `0x${crypto.randomBytes(32).toString('hex')}`;
    return (confirmations, dropped = false) => ({ network: 'ethereum', txHash, outputIndex: 0, address, asset: 'USDC', amountMinor, confirmations, dropped });
  }

  it('reported twice and out of order (final first, then older reports, then dropped): one deposit, credited once', async () => {
    const caller = await cryptoCaller(app);
    const report = await observed(caller, 5_000_000n);
    const record = (o: TransferObservation) => app.services.cryptoDeposits.record(o);
    const first = await record(report(14));
    expect(first?.status).toBe('completed');
    for (const later of [report(0), report(5), report(14), report(20), report(3, true)]) expect((await record(later))?.status).toBe('completed');
    const rows = await testKnex()('crypto_deposits').where({ tx_hash: report(0).txHash });
    expect(rows).toHaveLength(1);
    expect(await creditPostings(first?.id as string)).toBe(1);
    expect(await walletBalance(caller.user.id, 'USDC')).toBe(5_000_000n);
  });

  it('the same final report many times at once: one deposit, credited once', async () => {
    const caller = await cryptoCaller(app);
    const report = await observed(caller, 2_000_000n);
    const results = await Promise.all(Array.from({ length: 6 }, () => app.services.cryptoDeposits.record(report(12))));
    expect(new Set(results.map((d) => d?.id)).size).toBe(1);
    expect(await walletBalance(caller.user.id, 'USDC')).toBe(2_000_000n);
    expect(await creditPostings(results[0]?.id as string)).toBe(1);
  });

  it('confirmations never go down, and a deposit dropped before finality stays reversed when seen again', async () => {
    const caller = await cryptoCaller(app);
    const report = await observed(caller, 1_000_000n);
    const record = (o: TransferObservation) => app.services.cryptoDeposits.record(o);
    expect(await record(report(6))).toMatchObject({ status: 'confirming', confirmations: 6 });
    expect(await record(report(2))).toMatchObject({ status: 'confirming', confirmations: 6 });
    expect(await record(report(6, true))).toMatchObject({ status: 'reversed' });
    expect(await record(report(30))).toMatchObject({ status: 'reversed' });
    expect(await walletBalance(caller.user.id, 'USDC')).toBe(0n);
  });

  it('a transfer first seen dropped, or to an unknown address, records nothing', async () => {
    const caller = await cryptoCaller(app);
    const report = await observed(caller, 1_000_000n);
    expect(await app.services.cryptoDeposits.record(report(3, true))).toBeUndefined();
    expect(await app.services.cryptoDeposits.record({ ...report(3), address: '0x0000000000000000000000000000000000000001' })).toBeUndefined();
    expect(await testKnex()('crypto_deposits').where({ tx_hash: report(0).txHash }).first()).toBeUndefined();
  });
});
