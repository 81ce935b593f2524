import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { ensureAccount, externalClearingAccount, post } from '../../src/modules/ledger';
import { organizationCryptoIdentity } from '../../src/modules/crypto';
import { buildTestApp, type App } from '../support/app';
import { createApiKey } from '../support/api-keys';
import { cryptoCaller } from '../support/crypto';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, businessPath, createMember, createOrgAccount, createOrganization, walletBalance, type Role, type TestCaller, type TestOrgAccount } from '../support/factories';
import { balanceOf, expectLedgerInvariants, postingEntries } from '../support/ledger-invariants';
import { SHIPPED_LIMIT_POLICY } from '../support/limits';
import { moveMoney } from '../support/org-account-postings';

/** One app under the shipped tier policy: every conversion here meets the real caps. */
let app: App;

beforeAll(async () => {
  app = await buildTestApp({ limitPolicy: SHIPPED_LIMIT_POLICY });
});

interface CryptoOrg {
  id: string;
  xof: TestOrgAccount;
  eur: TestOrgAccount;
  tokens: Record<Role, string>;
}

const ROLES: Role[] = ['owner', 'admin', 'representative', 'director', 'finance_manager', 'cashier'];

/** An organisation (verified unless told) with a member of every role, an XOF account holding `xofMinor` and an empty EUR account. */
async function cryptoOrg(xofMinor = 10_000_000n, options: { verified?: boolean } = {}): Promise<CryptoOrg> {
  const org = await createOrganization();
  if (options.verified ?? true) await testKnex()('organizations').where({ id: org.id }).update({ verification_status: 'verified', verification_decided_at: new Date() });
  const xof = await createOrgAccount(org, { currency: 'XOF' });
  const eur = await createOrgAccount(org, { currency: 'EUR' });
  if (xofMinor > 0n) await moveMoney(xof, xofMinor);
  const tokens = {} as Record<Role, string>;
  for (const role of ROLES) tokens[role] = await accessTokenFor(app, await createMember(org, role));
  return { id: org.id, xof, eur, tokens };
}

/** The organisation's stablecoin ledger account credited with `minor` by the operator (outside the limits, as a wallet's funding). */
async function fundStablecoin(orgId: string, asset: string, minor: bigint): Promise<string> {
  return withTransaction(testKnex(), async (trx) => {
    const account = await ensureAccount(trx, organizationCryptoIdentity(orgId, asset));
    const clearing = await externalClearingAccount(trx, asset);
    await post(trx, { kind: 'wallet.funding', reference: crypto.randomUUID(), metadata: {}, entries: [{ accountId: clearing.id, amountMinor: -minor }, { accountId: account.id, amountMinor: minor }] });
    return account.id;
  });
}

async function stablecoinBalance(orgId: string, asset: string): Promise<bigint> {
  const row = await testKnex()('ledger_accounts').where({ owner_type: 'organization', owner_id: orgId, kind: 'org_account', external_ref: 'crypto', currency: asset }).first('balance_minor');
  return row ? BigInt(row.balance_minor as string) : 0n;
}

const path = (orgId: string, rest: string) => `${businessPath(orgId)}/crypto${rest}`;

function quote(target: App, orgId: string, auth: Record<string, string>, body: object) {
  return request(target).post(path(orgId, '/quotes')).set(auth).send(body);
}

function convert(target: App, orgId: string, auth: Record<string, string>, quoteId: string, key: string = crypto.randomUUID()) {
  return request(target).post(path(orgId, '/conversions')).set(auth).set('Idempotency-Key', key).send({ quote_id: quoteId });
}

/** A quote then its conversion; answers the conversion's response. */
async function quoteAndConvert(target: App, orgId: string, auth: Record<string, string>, body: object) {
  const quoted = await quote(target, orgId, auth, body);
  expect(quoted.status, JSON.stringify(quoted.body)).toBe(201);
  return convert(target, orgId, auth, quoted.body.data.id as string);
}

describe('organisation conversions', () => {
  it('buys USDC from the XOF account: one balanced posting through the liquidity accounts, the stablecoin balance shown, the event to the organisation', async () => {
    const org = await cryptoOrg(1_000_000n);
    const quoted = await quote(app, org.id, bearer(org.tokens.finance_manager), { from_currency: 'XOF', to_currency: 'USDC', from_amount: '656000', account_id: org.xof.id });
    expect(quoted.status, JSON.stringify(quoted.body)).toBe(201);
    expect(quoted.body.data).toMatchObject({ object: 'crypto_quote', organization_id: org.id, account_id: org.xof.id, from_currency: 'XOF', to_currency: 'USDC', from_amount_minor: '656000', fee_minor: '3280' });
    const converted = await convert(app, org.id, bearer(org.tokens.finance_manager), quoted.body.data.id);
    expect(converted.status, JSON.stringify(converted.body)).toBe(201);
    const received = BigInt(converted.body.data.to_amount_minor);
    expect(received).toBe(BigInt(quoted.body.data.to_amount_minor));
    expect(converted.body.data).toMatchObject({ object: 'crypto_conversion', organization_id: org.id, account_id: org.xof.id, quote_id: quoted.body.data.id, status: 'completed' });
    expect(await balanceOf(testKnex(), org.xof.ledgerAccountId)).toBe(1_000_000n - 656_000n);
    expect(await stablecoinBalance(org.id, 'USDC')).toBe(received);
    const entries = await postingEntries(testKnex(), 'crypto.conversion', converted.body.data.id);
    const sums = new Map<string, bigint>();
    for (const entry of entries) sums.set(entry.currency, (sums.get(entry.currency) ?? 0n) + entry.amount);
    expect(Object.fromEntries(sums)).toEqual({ XOF: 0n, USDC: 0n });

    const balances = await request(app).get(path(org.id, '/balances')).set(bearer(org.tokens.director));
    expect(balances.status, JSON.stringify(balances.body)).toBe(200);
    expect(balances.body.data.data).toEqual([
      { object: 'crypto_balance', currency: 'USDC', currency_exponent: 6, balance: expect.any(String), balance_minor: received.toString(), updated_at: expect.any(String) },
      { object: 'crypto_balance', currency: 'USDT', currency_exponent: 6, balance: '0.000000', balance_minor: '0', updated_at: null },
    ]);
    const listed = await request(app).get(path(org.id, '/conversions')).set(bearer(org.tokens.representative));
    expect(listed.body.data.data.map((c: { id: string }) => c.id)).toEqual([converted.body.data.id]);
    const one = await request(app).get(path(org.id, `/conversions/${converted.body.data.id}`)).set(bearer(org.tokens.owner));
    expect(one.body.data).toEqual(converted.body.data);
    const event = await testKnex()('events').where({ subject_id: converted.body.data.id }).first('type', 'organization_id');
    expect(event).toEqual({ type: 'crypto.conversion.completed', organization_id: org.id });
    await expectLedgerInvariants(testKnex());
  });

  it('sells USDC into the EUR account and swaps USDC for USDT without an account; a user never sees them', async () => {
    const org = await cryptoOrg(0n);
    await fundStablecoin(org.id, 'USDC', 500_000_000n);
    const sold = await quoteAndConvert(app, org.id, bearer(org.tokens.admin), { from_currency: 'USDC', to_currency: 'EUR', from_amount: '100', account_id: org.eur.id });
    expect(sold.status, JSON.stringify(sold.body)).toBe(201);
    expect(await balanceOf(testKnex(), org.eur.ledgerAccountId)).toBe(BigInt(sold.body.data.to_amount_minor));
    const swapped = await quoteAndConvert(app, org.id, bearer(org.tokens.owner), { from_currency: 'USDC', to_currency: 'USDT', from_amount: '50' });
    expect(swapped.status, JSON.stringify(swapped.body)).toBe(201);
    expect(swapped.body.data.account_id).toBeNull();
    expect(await stablecoinBalance(org.id, 'USDC')).toBe(350_000_000n);
    expect(await stablecoinBalance(org.id, 'USDT')).toBe(BigInt(swapped.body.data.to_amount_minor));
    const user = await cryptoCaller(app);
    expect((await request(app).get(`/api/crypto/conversions/${swapped.body.data.id}`).set(user.auth)).status).toBe(404);
    await expectLedgerInvariants(testKnex());
  });

  it('refuses, with nothing written: two fiat sides, a fiat side without its account, an account in another currency or of another organisation, an account on a swap, short funds', async () => {
    const org = await cryptoOrg(1_000n);
    const other = await cryptoOrg(0n);
    const auth = bearer(org.tokens.owner);
    const refusals: Array<[object, number, string]> = [
      [{ from_currency: 'XOF', to_currency: 'EUR', from_amount: '1000', account_id: org.xof.id }, 400, 'to_currency'],
      [{ from_currency: 'XOF', to_currency: 'USDC', from_amount: '1000' }, 400, 'account_id'],
      [{ from_currency: 'XOF', to_currency: 'USDC', from_amount: '1000', account_id: org.eur.id }, 400, 'account_id'],
      [{ from_currency: 'XOF', to_currency: 'USDC', from_amount: '1000', account_id: other.xof.id }, 400, 'account_id'],
      [{ from_currency: 'USDC', to_currency: 'USDT', from_amount: '1', account_id: org.xof.id }, 400, 'account_id'],
    ];
    for (const [body, status, field] of refusals) {
      const res = await quote(app, org.id, auth, body);
      expect([res.status, res.body.error, res.body.details?.[0]?.field], JSON.stringify(res.body)).toEqual([status, 'ValidationError', field]);
    }
    expect(await testKnex()('crypto_quotes').where({ organization_id: org.id })).toEqual([]);
    const short = await quoteAndConvert(app, org.id, auth, { from_currency: 'XOF', to_currency: 'USDC', from_amount: '5000', account_id: org.xof.id });
    expect([short.status, short.body.error]).toEqual([422, 'InsufficientFunds']);
    expect(await balanceOf(testKnex(), org.xof.ledgerAccountId)).toBe(1_000n);
    // Another organisation's quote is unknown here.
    const foreign = await quote(app, other.id, bearer(other.tokens.owner), { from_currency: 'USDC', to_currency: 'USDT', from_amount: '1' });
    const res = await convert(app, org.id, auth, foreign.body.data.id);
    expect([res.status, res.body.error]).toEqual([404, 'QuoteNotFound']);
  });

  it('an unverified organisation may neither quote nor convert: 403 OrganizationNotVerified, as for payouts', async () => {
    const org = await cryptoOrg(100_000n, { verified: false });
    const res = await quote(app, org.id, bearer(org.tokens.owner), { from_currency: 'XOF', to_currency: 'USDC', from_amount: '1000', account_id: org.xof.id });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ success: false, error: 'OrganizationNotVerified', message: 'Only a verified organisation can convert stablecoins; complete its business verification first.' });
    // A quote made while verified no longer converts once the verification is withdrawn.
    await testKnex()('organizations').where({ id: org.id }).update({ verification_status: 'verified', verification_decided_at: new Date() });
    const quoted = await quote(app, org.id, bearer(org.tokens.owner), { from_currency: 'XOF', to_currency: 'USDC', from_amount: '1000', account_id: org.xof.id });
    expect(quoted.status).toBe(201);
    await testKnex()('organizations').where({ id: org.id }).update({ verification_status: 'rejected' });
    const converted = await convert(app, org.id, bearer(org.tokens.owner), quoted.body.data.id);
    expect([converted.status, converted.body.error]).toEqual([403, 'OrganizationNotVerified']);
    expect(await balanceOf(testKnex(), org.xof.ledgerAccountId)).toBe(100_000n);
  });

  it.each(['inactive', 'pending', 'closed'] as const)('an account that is %s neither quotes nor converts: 409 AccountNotActive, nothing posted', async (status) => {
    const org = await cryptoOrg(100_000n);
    await fundStablecoin(org.id, 'USDC', 50_000_000n);
    const auth = bearer(org.tokens.owner);
    // Quoted while active (buying USDC with XOF, selling USDC into EUR), then the accounts change status.
    const buy = await quote(app, org.id, auth, { from_currency: 'XOF', to_currency: 'USDC', from_amount: '1000', account_id: org.xof.id });
    const sell = await quote(app, org.id, auth, { from_currency: 'USDC', to_currency: 'EUR', from_amount: '10', account_id: org.eur.id });
    expect([buy.status, sell.status]).toEqual([201, 201]);
    await testKnex()('organization_accounts').whereIn('id', [org.xof.id, org.eur.id]).update({ status });
    for (const [quoted, account] of [[buy, org.xof], [sell, org.eur]] as const) {
      const res = await convert(app, org.id, auth, quoted.body.data.id);
      expect(res.status, JSON.stringify(res.body)).toBe(409);
      expect(res.body).toMatchObject({ error: 'AccountNotActive', details: { account_id: account.id, status } });
      expect(res.body.message).toContain(status);
      expect((await testKnex()('crypto_quotes').where({ id: quoted.body.data.id }).first()).used_at).toBeNull();
    }
    const again = await quote(app, org.id, auth, { from_currency: 'XOF', to_currency: 'USDC', from_amount: '1000', account_id: org.xof.id });
    expect([again.status, again.body.error, again.body.details]).toEqual([409, 'AccountNotActive', { account_id: org.xof.id, status }]);
    expect(await testKnex()('crypto_conversions').where({ organization_id: org.id })).toEqual([]);
    expect(await balanceOf(testKnex(), org.xof.ledgerAccountId)).toBe(100_000n);
    expect(await balanceOf(testKnex(), org.eur.ledgerAccountId)).toBe(0n);
    expect(await stablecoinBalance(org.id, 'USDC')).toBe(50_000_000n);
    // A swap between two stablecoins names no account: unaffected.
    const swapped = await quoteAndConvert(app, org.id, auth, { from_currency: 'USDC', to_currency: 'USDT', from_amount: '1' });
    expect(swapped.status, JSON.stringify(swapped.body)).toBe(201);
  });
});

describe('who may: the role matrix and the API-key scopes', () => {
  it('owner, admin and finance_manager convert; representative and director read only; a cashier reads nothing', async () => {
    const org = await cryptoOrg(1_000_000n);
    const body = { from_currency: 'XOF', to_currency: 'USDC', from_amount: '1000', account_id: org.xof.id };
    for (const role of ['owner', 'admin', 'finance_manager'] as const) {
      const res = await quoteAndConvert(app, org.id, bearer(org.tokens[role]), body);
      expect(res.status, `${role}: ${JSON.stringify(res.body)}`).toBe(201);
    }
    for (const role of ['representative', 'director', 'cashier'] as const) {
      const res = await quote(app, org.id, bearer(org.tokens[role]), body);
      expect([res.status, res.body.error], role).toEqual([403, 'InsufficientRole']);
    }
    for (const role of ['representative', 'director'] as const) {
      expect((await request(app).get(path(org.id, '/balances')).set(bearer(org.tokens[role]))).status, role).toBe(200);
      expect((await request(app).get(path(org.id, '/conversions')).set(bearer(org.tokens[role]))).body.data.data, role).toHaveLength(3);
    }
    for (const rest of ['/balances', '/conversions']) {
      const res = await request(app).get(path(org.id, rest)).set(bearer(org.tokens.cashier));
      expect([res.status, res.body.error], rest).toEqual([403, 'InsufficientRole']);
    }
  });

  it('a key with crypto:write converts; crypto:read reads but gets 403 InsufficientScope on a quote; a key without crypto scopes reads nothing', async () => {
    const org = await cryptoOrg(1_000_000n);
    const writer = await createApiKey(app, org, ['crypto:write']);
    const reader = await createApiKey(app, org, ['crypto:read']);
    const payouts = await createApiKey(app, org, ['payouts:write', 'accounts:write']);
    const body = { from_currency: 'XOF', to_currency: 'USDC', from_amount: '1000', account_id: org.xof.id };
    const converted = await quoteAndConvert(app, org.id, writer.auth, body);
    expect(converted.status, JSON.stringify(converted.body)).toBe(201);
    // A key acts for no one: the event names no actor.
    expect(await testKnex()('events').where({ subject_id: converted.body.data.id }).first('actor_user_id')).toEqual({ actor_user_id: null });
    const quoted = await quote(app, org.id, writer.auth, body);
    for (const key of [reader, payouts]) {
      const refused = await quote(app, org.id, key.auth, body);
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({ error: 'InsufficientScope', details: { required_scope: 'crypto:write' } });
      expect(refused.headers['x-accepted-scopes']).toBe('crypto:write');
      const notConverted = await convert(app, org.id, key.auth, quoted.body.data.id);
      expect([notConverted.status, notConverted.body.error]).toEqual([403, 'InsufficientScope']);
    }
    expect((await request(app).get(path(org.id, '/balances')).set(reader.auth)).status).toBe(200);
    expect((await request(app).get(path(org.id, `/conversions/${converted.body.data.id}`)).set(reader.auth)).status).toBe(200);
    const unread = await request(app).get(path(org.id, '/balances')).set(payouts.auth);
    expect([unread.status, unread.body.details?.required_scope]).toEqual([403, 'crypto:read']);
  });
});

describe('stablecoin caps at the edge (the shipped tier policy)', () => {
  const caps = (asset: string, tier: 'tier_2' | 'verified') => {
    const found = SHIPPED_LIMIT_POLICY.currencies.get(asset)?.get(tier);
    if (!found) throw new Error(`no ${tier} caps in ${asset}`);
    return found;
  };

  it('an organisation buys USDC up to one unit under its balance cap, then to the cap; one unit over is 409 LimitExceeded with nothing moved', async () => {
    const org = await cryptoOrg(10_000n);
    const cap = caps('USDC', 'verified').balance;
    const auth = bearer(org.tokens.owner);
    await fundStablecoin(org.id, 'USDC', cap - 2n);
    const oneUnit = { from_currency: 'XOF', to_currency: 'USDC', to_amount: '0.000001', account_id: org.xof.id };
    expect((await quoteAndConvert(app, org.id, auth, oneUnit)).status).toBe(201);
    expect(await stablecoinBalance(org.id, 'USDC')).toBe(cap - 1n);
    expect((await quoteAndConvert(app, org.id, auth, oneUnit)).status).toBe(201);
    expect(await stablecoinBalance(org.id, 'USDC')).toBe(cap);
    const xofBefore = await balanceOf(testKnex(), org.xof.ledgerAccountId);
    const over = await quoteAndConvert(app, org.id, auth, oneUnit);
    expect(over.status).toBe(409);
    expect(over.body).toEqual({
      success: false,
      error: 'LimitExceeded',
      message: expect.any(String),
      details: { limit: 'balance', currency: 'USDC', limit_minor: cap.toString(), remaining_minor: '0', tier: 'verified', next_tier: null },
    });
    expect(await stablecoinBalance(org.id, 'USDC')).toBe(cap);
    expect(await balanceOf(testKnex(), org.xof.ledgerAccountId)).toBe(xofBefore);
    await expectLedgerInvariants(testKnex());
  });

  it('an organisation sells USDT up to its per-transaction cap; one unit over is refused', async () => {
    const org = await cryptoOrg(0n);
    const cap = caps('USDT', 'verified').per_transaction;
    await fundStablecoin(org.id, 'USDT', cap * 3n);
    const auth = bearer(org.tokens.finance_manager);
    const decimal = (minor: bigint) => `${minor / 1_000_000n}.${(minor % 1_000_000n).toString().padStart(6, '0')}`;
    const sell = (minor: bigint) => quoteAndConvert(app, org.id, auth, { from_currency: 'USDT', to_currency: 'USDC', from_amount: decimal(minor) });
    const over = await sell(cap + 1n);
    expect([over.status, over.body.details]).toEqual([409, expect.objectContaining({ limit: 'per_transaction', currency: 'USDT', limit_minor: cap.toString() })]);
    expect((await sell(cap)).status).toBe(201);
    expect((await sell(cap - 1n)).status).toBe(201);
    expect(await stablecoinBalance(org.id, 'USDT')).toBe(cap * 3n - cap - (cap - 1n));
  });

  it('a tier_2 user buys USDC up to its balance cap; one unit over is its own 409 LimitExceeded', async () => {
    const cap = caps('USDC', 'tier_2').balance;
    const user: TestCaller = await cryptoCaller(app, { XOF: 10_000n, USDC: cap - 2n });
    const buy = async () => {
      const quoted = await request(app).post('/api/crypto/quotes').set(user.auth).send({ from_currency: 'XOF', to_currency: 'USDC', to_amount: '0.000001' });
      expect(quoted.status, JSON.stringify(quoted.body)).toBe(201);
      return request(app).post('/api/crypto/conversions').set(user.auth).set('Idempotency-Key', crypto.randomUUID()).send({ quote_id: quoted.body.data.id });
    };
    expect((await buy()).status).toBe(201);
    expect((await buy()).status).toBe(201);
    expect(await walletBalance(user.user.id, 'USDC')).toBe(cap);
    const over = await buy();
    expect([over.status, over.body.error, over.body.details]).toEqual([409, 'LimitExceeded', expect.objectContaining({ limit: 'balance', currency: 'USDC', remaining_minor: '0', tier: 'tier_2' })]);
    expect(await walletBalance(user.user.id, 'USDC')).toBe(cap);
  });

  it('GET /me/limits and the organisation limits show the USDC and USDT caps; a tier_1 user and an unverified organisation hold none', async () => {
    const top = await cryptoCaller(app);
    const shown = await request(app).get('/api/me/limits').set(top.auth).expect(200);
    const usdc = (shown.body.data.currencies as Array<{ currency: string; limits: Array<{ limit: string; limit_minor: string }> }>).find((c) => c.currency === 'USDC');
    expect(usdc?.limits.find((l) => l.limit === 'balance')?.limit_minor).toBe(caps('USDC', 'tier_2').balance.toString());
    const low = await cryptoCaller(app, {}, 'tier_1');
    const lowShown = await request(app).get('/api/me/limits').set(low.auth).expect(200);
    for (const coin of ['USDC', 'USDT']) {
      const entry = (lowShown.body.data.currencies as Array<{ currency: string; limits: Array<{ limit_minor: string }> }>).find((c) => c.currency === coin);
      expect(entry?.limits.map((l) => l.limit_minor)).toEqual(['0', '0', '0', '0']);
    }
    const org = await cryptoOrg(0n, { verified: false });
    const orgShown = await request(app).get(`${businessPath(org.id)}/limits`).set(bearer(org.tokens.owner)).expect(200);
    const orgUsdt = (orgShown.body.data.currencies as Array<{ currency: string; limits: Array<{ limit_minor: string }> }>).find((c) => c.currency === 'USDT');
    expect(orgUsdt?.limits.map((l) => l.limit_minor)).toEqual(['0', '0', '0', '0']);
  });
});
