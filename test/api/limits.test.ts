import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { fundWallet, walletOf } from '../../src/modules/ledger';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { openEscrow, escrowAction } from '../support/escrows';
import { activeTontine, contribute, poolBalance } from '../support/tontines';
import { addMember, bearer, accessTokenFor, businessPath, createCaller, createMember, createOrganization, createOrgAccount, createUser, type TestCaller } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { SHIPPED_LIMIT_POLICY } from '../support/limits';

let app: App;
const knex = testKnex();

beforeAll(async () => {
  app = await buildTestApp({ limitPolicy: SHIPPED_LIMIT_POLICY });
});

type Tier = 'tier_0' | 'tier_1' | 'tier_2';

/** A caller at `tier` whose wallets hold `balances` (the operator's funding: outside the limits). */
async function callerAt(tier: Tier, balances: Record<string, bigint> = {}): Promise<TestCaller> {
  const caller = await createCaller(app, balances);
  await knex('users').where({ id: caller.user.id }).update({ tier });
  return caller;
}

/** POST /transfers of `minor` minor units (the body's amount is in major units). */
function send(from: TestCaller, to: TestCaller, currency: 'XOF' | 'EUR', minor: number) {
  const amount = currency === 'XOF' ? minor : minor / 100;
  return request(app).post('/api/transfers').set(from.auth).set('Idempotency-Key', crypto.randomUUID()).send({ amount, currency, recipientIdentifier: to.user.email });
}

/** Makes the wallet show `minor` received this month, as earlier movements would have (through the ledger's own flag). */
async function receivedThisMonth(userId: string, currency: string, minor: bigint): Promise<void> {
  await withTransaction(knex, async (trx) => {
    const wallet = await walletOf(trx, userId, currency);
    await trx.raw("SELECT set_config('ledger.posting', 'on', true)");
    await trx('ledger_accounts')
      .where({ id: wallet.id })
      .update({ inflow_month: trx.raw("date_trunc('month', now() AT TIME ZONE 'UTC')::date"), inflow_month_minor: minor.toString() });
  });
}

function caps(currency: 'XOF' | 'EUR', tier: Tier) {
  const found = SHIPPED_LIMIT_POLICY.currencies.get(currency)?.get(tier);
  if (!found) throw new Error(`no ${tier} caps in ${currency}`);
  return { balance: Number(found.balance), monthly: Number(found.monthly_inflow), daily: Number(found.daily_outflow), perTransaction: Number(found.per_transaction) };
}

function limitExceeded(limit: string, currency: string, limitMinor: number, remainingMinor: number) {
  return {
    success: false,
    error: 'LimitExceeded',
    message: expect.any(String),
    details: { limit, currency, limit_minor: String(limitMinor), remaining_minor: String(remainingMinor), tier: 'tier_0', next_tier: { tier: 'tier_1', requires: 'identity_verification' } },
  };
}

const RECIPIENT_CANNOT_RECEIVE = { success: false, error: 'RecipientCannotReceive', message: 'The recipient cannot receive this amount at the moment.' };

describe.each(['XOF', 'EUR'] as const)('transfers at the edge of each tier_0 limit (%s)', (currency) => {
  const tier0 = caps(currency, 'tier_0');

  it('per_transaction: one unit over is refused with 409 LimitExceeded, at and one under pass', async () => {
    const sender = await callerAt('tier_0', { [currency]: 1_000_000n });
    const recipient = await callerAt('tier_2');
    const over = await send(sender, recipient, currency, tier0.perTransaction + 1);
    expect(over.status).toBe(409);
    expect(over.body).toEqual(limitExceeded('per_transaction', currency, tier0.perTransaction, tier0.perTransaction));
    expect((await send(sender, recipient, currency, tier0.perTransaction)).status).toBe(200);
    expect((await send(sender, recipient, currency, tier0.perTransaction - 1)).status).toBe(200);
  });

  it('daily_outflow: what remains of the day is told; one unit over is refused, at the cap passes, then nothing more', async () => {
    const sender = await callerAt('tier_0', { [currency]: 1_000_000n });
    const recipient = await callerAt('tier_2');
    expect((await send(sender, recipient, currency, tier0.perTransaction)).status).toBe(200);
    const under = tier0.daily - tier0.perTransaction - 1;
    expect((await send(sender, recipient, currency, under)).status).toBe(200);
    const over = await send(sender, recipient, currency, 2);
    expect(over.status).toBe(409);
    expect(over.body).toEqual(limitExceeded('daily_outflow', currency, tier0.daily, 1));
    expect((await send(sender, recipient, currency, 1)).status).toBe(200);
    const after = await send(sender, recipient, currency, 1);
    expect(after.body).toEqual(limitExceeded('daily_outflow', currency, tier0.daily, 0));
  });

  it('balance of the recipient: 409 RecipientCannotReceive one unit over, saying nothing of the recipient; at the cap passes', async () => {
    const sender = await callerAt('tier_2', { [currency]: 1_000_000n });
    const recipient = await callerAt('tier_0', { [currency]: BigInt(tier0.balance - 1000) });
    const over = await send(sender, recipient, currency, 1001);
    expect(over.status).toBe(409);
    expect(over.body).toEqual(RECIPIENT_CANNOT_RECEIVE);
    expect(JSON.stringify(over.body)).not.toMatch(/tier|balance|limit|[0-9]/);
    expect((await send(sender, recipient, currency, 999)).status).toBe(200);
    expect((await send(sender, recipient, currency, 1)).status).toBe(200);
    expect((await send(sender, recipient, currency, 1)).body).toEqual(RECIPIENT_CANNOT_RECEIVE);
    const wallet = await request(app).get('/api/wallets').set(recipient.auth).expect(200);
    expect(wallet.body.data.data[0].balance_minor).toBe(String(tier0.balance));
  });

  it('monthly_inflow of the recipient: one unit over is refused, at the cap passes', async () => {
    const sender = await callerAt('tier_2', { [currency]: 1_000_000n });
    const recipient = await callerAt('tier_0', { [currency]: 1n });
    await receivedThisMonth(recipient.user.id, currency, BigInt(tier0.monthly - 10));
    expect((await send(sender, recipient, currency, 11)).body).toEqual(RECIPIENT_CANNOT_RECEIVE);
    expect((await send(sender, recipient, currency, 9)).status).toBe(200);
    expect((await send(sender, recipient, currency, 1)).status).toBe(200);
    expect((await send(sender, recipient, currency, 1)).body).toEqual(RECIPIENT_CANNOT_RECEIVE);
  });

  it('a balance above its cap never blocks spending', async () => {
    const sender = await callerAt('tier_0', { [currency]: BigInt(tier0.balance * 3) });
    const recipient = await callerAt('tier_2');
    expect((await send(sender, recipient, currency, tier0.perTransaction)).status).toBe(200);
  });
});

describe.each(['XOF', 'EUR'] as const)('escrow funding at the edge of the buyer limits (%s)', (currency) => {
  const tier0 = caps(currency, 'tier_0');
  const major = (minor: number) => (currency === 'XOF' ? minor : minor / 100);

  async function escrowOf(buyer: TestCaller, minor: number) {
    const seller = await callerAt('tier_2');
    return openEscrow(app, buyer, seller, { amount: major(minor), currency, fee_payer: 'seller' });
  }

  it('per_transaction: one unit over is refused and nothing moves; at and one under are funded', async () => {
    const buyer = await callerAt('tier_0', { [currency]: 1_000_000n });
    const over = await escrowOf(buyer, tier0.perTransaction + 1);
    const refused = await escrowAction(app, buyer, over.id, 'fund');
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual(limitExceeded('per_transaction', currency, tier0.perTransaction, tier0.perTransaction));
    expect((await request(app).get(`/api/escrows/${over.id}`).set(buyer.auth)).body.data.status).toBe('awaiting_funding');
    expect((await escrowAction(app, buyer, (await escrowOf(buyer, tier0.perTransaction)).id, 'fund')).status).toBe(200);
    expect((await escrowAction(app, buyer, (await escrowOf(buyer, tier0.perTransaction - 1)).id, 'fund')).status).toBe(200);
  });

  it('daily_outflow: one unit over what remains is refused, exactly what remains is funded', async () => {
    const buyer = await callerAt('tier_0', { [currency]: 1_000_000n });
    const remaining = 10;
    expect((await escrowAction(app, buyer, (await escrowOf(buyer, tier0.perTransaction)).id, 'fund')).status).toBe(200);
    expect((await escrowAction(app, buyer, (await escrowOf(buyer, tier0.daily - tier0.perTransaction - remaining)).id, 'fund')).status).toBe(200);
    const over = await escrowAction(app, buyer, (await escrowOf(buyer, remaining + 1)).id, 'fund');
    expect(over.body).toEqual(limitExceeded('daily_outflow', currency, tier0.daily, remaining));
    expect((await escrowAction(app, buyer, (await escrowOf(buyer, remaining)).id, 'fund')).status).toBe(200);
    await expectLedgerInvariants(knex);
  });
});

describe('escrow release to a seller its limits do not allow', () => {
  it('accept holds the release for verification, telling nothing of the seller, and the money stays held', async () => {
    const buyer = await callerAt('tier_2', { XOF: 1_000_000n });
    const seller = await callerAt('tier_0');
    const { perTransaction } = caps('XOF', 'tier_0');
    const escrow = await openEscrow(app, buyer, seller, { amount: perTransaction + 1, currency: 'XOF', fee_payer: 'buyer' });
    expect((await escrowAction(app, buyer, escrow.id, 'fund')).status).toBe(200);
    expect((await escrowAction(app, seller, escrow.id, 'deliver')).status).toBe(200);
    const accepted = await escrowAction(app, buyer, escrow.id, 'accept');
    expect(accepted.status).toBe(200);
    expect(accepted.body.data.payout).toEqual({ id: expect.any(String), status: 'held_for_verification', reason: 'recipient_limit', held_at: expect.any(String), settled_at: null, recipient: 'seller' });
    expect(JSON.stringify(accepted.body.data.payout)).not.toMatch(/tier|balance|per_transaction/);
    expect((await request(app).get(`/api/escrows/${escrow.id}`).set(buyer.auth)).body.data.status).toBe('accepted');
    const wallet = await knex('ledger_accounts').where({ owner_type: 'user', owner_id: seller.user.id, currency: 'XOF', kind: 'wallet' }).first('balance_minor');
    expect(wallet?.balance_minor ?? '0').toBe('0');
  });
});

describe('tontine contributions at the edge of the member limits', () => {
  it('per_transaction: one unit over is refused and the pool receives nothing; at the cap the contribution is paid', async () => {
    const { perTransaction } = caps('XOF', 'tier_0');
    const organizer = await callerAt('tier_2', { XOF: 1_000_000n });
    const member = await callerAt('tier_0', { XOF: 1_000_000n });
    const over = await activeTontine(app, organizer, [member], { contribution_amount: perTransaction + 1 });
    const refused = await contribute(app, over.id, member);
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual(limitExceeded('per_transaction', 'XOF', perTransaction, perTransaction));
    expect(await poolBalance(over.id)).toBe(0n);
    const at = await activeTontine(app, organizer, [member], { contribution_amount: perTransaction });
    expect((await contribute(app, at.id, member)).status).toBe(200);
  });
});

describe('GET /me/limits', () => {
  it('shows each limit with what is used and what remains after movements, and when it resets', async () => {
    const alice = await callerAt('tier_0', { XOF: 150_000n });
    const bob = await callerAt('tier_0');
    expect((await send(alice, bob, 'XOF', 30_000)).status).toBe(200);
    const res = await request(app).get('/api/me/limits').set(alice.auth).expect(200);
    const now = new Date();
    const tomorrow = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString();
    const nextMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
    expect(res.body.data).toMatchObject({ object: 'limits', tier: 'tier_0', next_tier: { tier: 'tier_1', requires: 'identity_verification' }, policy_version: SHIPPED_LIMIT_POLICY.version });
    const xof = (res.body.data.currencies as Array<{ currency: string; limits: unknown[] }>).find((c) => c.currency === 'XOF');
    expect(xof?.limits).toEqual([
      { limit: 'balance', limit_minor: '200000', used_minor: '120000', remaining_minor: '80000', resets_at: null },
      { limit: 'monthly_inflow', limit_minor: '500000', used_minor: '0', remaining_minor: '500000', resets_at: nextMonth },
      { limit: 'daily_outflow', limit_minor: '200000', used_minor: '30000', remaining_minor: '170000', resets_at: tomorrow },
      { limit: 'per_transaction', limit_minor: '100000', used_minor: '0', remaining_minor: '100000', resets_at: null },
    ]);
    const received = await request(app).get('/api/me/limits').set(bob.auth).expect(200);
    const bobXof = (received.body.data.currencies as Array<{ currency: string; limits: Array<{ limit: string }> }>).find((c) => c.currency === 'XOF');
    expect(bobXof?.limits.find((l) => l.limit === 'monthly_inflow')).toMatchObject({ used_minor: '30000', remaining_minor: '470000' });
    expect(res.body.data.currencies.map((c: { currency: string }) => c.currency)).toEqual(['EUR', 'USD', 'USDC', 'USDT', 'XOF']);
  });

  it('a tier_2 user has no next tier', async () => {
    const top = await callerAt('tier_2');
    const res = await request(app).get('/api/me/limits').set(top.auth).expect(200);
    expect(res.body.data).toMatchObject({ tier: 'tier_2', next_tier: null });
  });
});

describe('GET /business/organizations/{orgId}/limits', () => {
  it('shows the unverified tier to a finance role until the verification is approved; a cashier is refused', async () => {
    const org = await createOrganization();
    const owner = await createUser();
    await addMember(org, owner, 'finance_manager');
    const auth = bearer(await accessTokenFor(app, owner));
    const res = await request(app).get(`${businessPath(org.id)}/limits`).set(auth).expect(200);
    expect(res.body.data).toMatchObject({ object: 'limits', tier: 'unverified', next_tier: { tier: 'verified', requires: 'business_verification' } });
    await knex('organizations').where({ id: org.id }).update({ verification_status: 'verified', verification_decided_at: knex.fn.now() });
    const verified = await request(app).get(`${businessPath(org.id)}/limits`).set(auth).expect(200);
    expect(verified.body.data).toMatchObject({ tier: 'verified', next_tier: null });
    const cashier = await createUser();
    await addMember(org, cashier, 'cashier');
    const refused = await request(app).get(`${businessPath(org.id)}/limits`).set(bearer(await accessTokenFor(app, cashier)));
    expect(refused.status).toBe(403);
  });
});

describe('payments received by an organisation', () => {
  it("a payment over the unverified organisation's per-transaction cap fails and credits nothing; one at the cap succeeds", async () => {
    const org = await createOrganization();
    const owner = await accessTokenFor(app, await createMember(org, 'owner'));
    const account = await createOrgAccount(org, { currency: 'XOF' });
    const checkout = await request(app).post(`${businessPath(org.id)}/checkout`).set(bearer(owner)).send({ destination_account_id: account.id });
    expect(checkout.status, JSON.stringify(checkout.body)).toBe(200);
    const cap = SHIPPED_LIMIT_POLICY.currencies.get('XOF')?.get('unverified')?.per_transaction as bigint;
    const pay = (amountMinor: bigint) =>
      app.services.payments.start({
        linkId: checkout.body.data.id as string,
        nonce: crypto.randomUUID(),
        amountMinor,
        reference: null,
        payer: { method: 'mobile_money', last4: '9999', decision: { outcome: 'succeeded', delayed: false } },
      });
    expect(await pay(cap + 1n)).toMatchObject({ status: 'failed', failureReason: 'destination_unavailable' });
    expect(await pay(cap)).toMatchObject({ status: 'succeeded' });
    const row = await knex('ledger_accounts').where({ id: account.ledgerAccountId }).first('balance_minor', 'inflow_month_minor');
    expect(row).toEqual({ balance_minor: String(cap), inflow_month_minor: String(cap) });
    await expectLedgerInvariants(knex);
  });
});

describe('money outside the limits', () => {
  it("the operator's funding is neither refused nor counted, even far above the caps", async () => {
    const user = await callerAt('tier_0');
    await withTransaction(knex, (trx) => fundWallet(trx, user.user.id, 'XOF', 5_000_000n));
    const res = await request(app).get('/api/me/limits').set(user.auth).expect(200);
    const xof = (res.body.data.currencies as Array<{ currency: string; limits: Array<{ limit: string; used_minor: string }> }>).find((c) => c.currency === 'XOF');
    expect(xof?.limits.find((l) => l.limit === 'monthly_inflow')?.used_minor).toBe('0');
    await expectLedgerInvariants(knex);
  });
});
