import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Express } from 'express';
import pino from 'pino';
import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MOBILE_MONEY_CALLBACK_SECRET } from '../../src/config';
import { withTransaction } from '../../src/db/transaction';
import { setAccountStatus, walletOf } from '../../src/modules/ledger';
import { createPayApp } from '../../src/pay/pay-app';
import { buildTestApp, testConfig, type App } from '../support/app';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, businessPath, createCaller, createMember, createOrgAccount, createOrganization, type TestCaller } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { SHIPPED_LIMIT_POLICY } from '../support/limits';
import { moveMoney } from '../support/org-account-postings';

/**
 * A scripted scenario of every money operation (escrow actions and cancel, tontine
 * contributions with a payout, transfers, top-ups, refunds, organisation payouts, crypto
 * deposits, withdrawals and conversions, a payment on the public payment page, a payout held
 * for verification then completed or returned), replays and refusals included: what each
 * request (or job run) answers (status, Location, body) and every event it records (type,
 * payload, data) are held, byte for byte, to a recording (fixtures/money-scenario.json). Ids,
 * e-mail addresses, telephone numbers, random commitments, payment link codes, deposit
 * addresses and receipt tokens are numbered in order of appearance and the services' clock
 * moves one second per step, so the recording is the same on every run and both back-ends; a
 * change of the write path that changes one byte of a response or an event fails here.
 * `RECORD_MONEY_SCENARIO=1` writes the recording again (a deliberate change of the contract).
 */
const RECORDING = path.join(__dirname, 'fixtures', 'money-scenario.json');
const START = Math.ceil(Date.now() / 1000) * 1000;
const knex = testKnex();
let app: App;
let payApp: Express;
let clock = new Date(START);

beforeAll(async () => {
  app = await buildTestApp({ now: () => clock });
  payApp = createPayApp({ config: testConfig(), logger: pino({ level: 'silent' }), paymentPage: app.services.paymentPage, rateLimitBackend: app.rateLimitBackend });
});

/** A request's answer, or a job's (status absent: no HTTP). */
type Step = { step: string; status?: number; location?: string; body: unknown; events: unknown[] };

/**
 * Rewrites what differs from run to run (ids, identifiers, random commitments, database times,
 * and the random values `aliases` lists by kind, such as a deposit address) into numbered names.
 */
function normaliser(aliases: ReadonlyArray<[kind: string, raw: string]> = []): (value: unknown) => unknown {
  const names = new Map<string, string>();
  const name = (kind: string, raw: string) => {
    const key = `${kind}:${raw}`;
    if (!names.has(key)) names.set(key, `<${kind}-${[...names.keys()].filter((k) => k.startsWith(`${kind}:`)).length + 1}>`);
    return names.get(key) as string;
  };
  const aliased = (value: string): string => aliases.reduce((written, [kind, raw]) => written.split(raw).join(name(kind, raw)), value);
  const text = (value: string): string =>
    aliased(value)
      .replace(/([?&]t=)([^&\s"]+)/g, (_match, prefix: string, token: string) => `${prefix}${name('receipt-token', token)}`)
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (id) => name('id', id))
      .replace(/\b[0-9a-f]{64}\b/g, (hash) => name('hash', hash))
      .replace(/[^\s"@<>]+@[^\s"@<>]+/g, (email) => name('email', email))
      .replace(/\+\d{8,15}/g, (phone) => name('phone', phone))
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, (time) => {
        const offset = (Date.parse(time) - START) / 1000;
        return Number.isInteger(offset) && offset >= 0 && offset < 10_000 ? `<clock+${offset}s>` : '<database-time>';
      });
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') return text(value);
    if (Array.isArray(value)) return value.map(walk);
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [text(k), walk(v)]));
    return value;
  };
  return walk;
}

describe('the money scenario', () => {
  it('answers and records, byte for byte, what its recording holds', async () => {
    const steps: Step[] = [];
    const seen = new Set<string>();
    const subjects = new Set<string>();
    const users: TestCaller[] = [];
    const caller = async (balance?: bigint) => {
      const made = await createCaller(app, balance ? { XOF: balance } : {});
      users.push(made);
      return made;
    };
    const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
    /** The events recorded since the previous step (by the scenario's users, or about its objects), in the order they happened. */
    const eventsSince = async () => {
      const mine = [...new Set(users.map((u) => u.user.id))];
      // The scenario's own events: by its users, or about its objects (another file's release job writes events of its own escrows).
      const rows = (await knex('events').where((q) => q.whereIn('actor_user_id', mine).orWhereIn('subject_id', [...subjects]))
        .orderBy([{ column: 'occurred_at' }, { column: 'subject_id' }, { column: 'object_sequence' }]).select('id', 'subject_type', 'subject_id', 'type', 'actor_user_id', 'payload', 'data', 'occurred_at', 'object_sequence')) as Array<{ id: string; subject_type: string; type: string; object_sequence: number; occurred_at: Date; [k: string]: unknown }>;
      return rows
        .filter((row) => !seen.has(row.id) && seen.add(row.id))
        .map(({ id: _id, occurred_at, ...row }) => ({ ...row, occurred_at: occurred_at.toISOString() }))
        // One step's events of several objects at one instant: by object kind, then each object's own order (ids are random).
        .sort((a, b) => order(a.occurred_at, b.occurred_at) || order(a.subject_type, b.subject_type) || Number(a.object_sequence) - Number(b.object_sequence) || order(a.type, b.type));
    };
    /** One request (to the API unless `to` names another app; signed in as `by` when given), then the events it recorded. */
    const send = async (label: string, method: 'post' | 'get', url: string, by: TestCaller | null, body?: object, key?: string, to: Express = app) => {
      let call = request(to)[method](url);
      if (by) call = call.set(by.auth);
      if (key) call = call.set('Idempotency-Key', key);
      const res = body === undefined ? await call : await call.send(body);
      clock = new Date(clock.getTime() + 1000);
      const produced = (res.body as { data?: { id?: unknown } }).data?.id;
      if (typeof produced === 'string') subjects.add(produced);
      steps.push({ step: label, status: res.status, ...(res.headers.location ? { location: res.headers.location as string } : {}), body: res.body, events: await eventsSince() });
      return res;
    };
    /** A job's run (or a sandbox rail's decision) outside any request: what it answers, then the events it recorded. */
    const job = async (label: string, run: () => Promise<unknown>) => {
      const result = await run();
      clock = new Date(clock.getTime() + 1000);
      steps.push({ step: label, body: result ?? null, events: await eventsSince() });
      return result;
    };
    /** Random values of the scenario's own making that the normaliser names (a deposit address, a payment link's code). */
    const aliases: Array<[string, string]> = [];
    const key = () => crypto.randomUUID();

    // Escrow: create, fund, deliver, accept; a replay of the funding; an accept refused by the lifecycle.
    const buyer = await caller(1_000_000n);
    const seller = await caller();
    const created = await send('escrow create', 'post', '/api/escrows', buyer, { role: 'buyer', counterparty_identifier: seller.user.email, amount: 10_000, currency: 'XOF', description: 'Scenario' }, key());
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const escrowId = created.body.data.id as string;
    const fundKey = key();
    await send('escrow fund', 'post', `/api/escrows/${escrowId}/fund`, buyer, undefined, fundKey);
    await send('escrow fund replayed', 'post', `/api/escrows/${escrowId}/fund`, buyer, undefined, fundKey);
    await send('escrow deliver by the buyer (refused)', 'post', `/api/escrows/${escrowId}/deliver`, buyer, {});
    await send('escrow deliver', 'post', `/api/escrows/${escrowId}/deliver`, seller, { tracking_reference: 'TRK-1' });
    const acceptKey = key();
    await send('escrow accept', 'post', `/api/escrows/${escrowId}/accept`, buyer, undefined, acceptKey);
    await send('escrow accept replayed', 'post', `/api/escrows/${escrowId}/accept`, buyer, undefined, acceptKey);
    await send('escrow accept again (refused)', 'post', `/api/escrows/${escrowId}/accept`, buyer, undefined, key());
    await send('escrow read', 'get', `/api/escrows/${escrowId}`, seller);

    // Escrow: a seller-paid fee, disputed and resolved by a split; another refunded by the seller.
    const admin = await createCaller(app, {}, { isAdmin: true });
    users.push(admin);
    const second = (await send('escrow create (seller pays the fee)', 'post', '/api/escrows', buyer, { role: 'buyer', counterparty_identifier: seller.user.email, amount: 20_000, currency: 'XOF', description: 'Split', fee_payer: 'seller' }, key())).body.data.id as string;
    await send('escrow fund of another escrow under a used key (refused)', 'post', `/api/escrows/${second}/fund`, buyer, undefined, fundKey);
    await send('escrow fund (second)', 'post', `/api/escrows/${second}/fund`, buyer, undefined, key());
    await send('escrow deliver (second)', 'post', `/api/escrows/${second}/deliver`, seller);
    await send('escrow dispute', 'post', `/api/escrows/${second}/dispute`, buyer, { reason: 'Scratched' });
    await send('escrow resolve split', 'post', `/api/escrows/${second}/resolve`, admin, { outcome: 'split', seller_amount: 12_000, note: 'Half' }, key());
    const third = (await send('escrow create (third)', 'post', '/api/escrows', buyer, { role: 'buyer', counterparty_identifier: seller.user.email, amount: 5_000, currency: 'XOF', description: 'Refund' }, key())).body.data.id as string;
    await send('escrow fund (third)', 'post', `/api/escrows/${third}/fund`, buyer, undefined, key());
    await send('escrow refund by the seller', 'post', `/api/escrows/${third}/refund`, seller, undefined, key());

    // Escrow refusals: insufficient funds, a frozen seller wallet at acceptance.
    const poor = await caller(100n);
    const poorEscrow = (await send('escrow create (poor buyer)', 'post', '/api/escrows', poor, { role: 'buyer', counterparty_identifier: seller.user.email, amount: 10_000, currency: 'XOF', description: 'Poor' }, key())).body.data.id as string;
    await send('escrow fund refused (insufficient funds)', 'post', `/api/escrows/${poorEscrow}/fund`, poor, undefined, key());
    const frozenSeller = await caller();
    const fourth = (await send('escrow create (frozen seller)', 'post', '/api/escrows', buyer, { role: 'buyer', counterparty_identifier: frozenSeller.user.email, amount: 3_000, currency: 'XOF', description: 'Frozen' }, key())).body.data.id as string;
    await send('escrow fund (frozen seller)', 'post', `/api/escrows/${fourth}/fund`, buyer, undefined, key());
    await send('escrow deliver (frozen seller)', 'post', `/api/escrows/${fourth}/deliver`, frozenSeller);
    await withTransaction(knex, async (trx) => setAccountStatus(trx, (await walletOf(trx, frozenSeller.user.id, 'XOF')).id, 'frozen'));
    await send('escrow accept refused (frozen seller wallet)', 'post', `/api/escrows/${fourth}/accept`, buyer, undefined, key());

    // Tontine: three members, the first cycle's contributions (the last pays the pot out), a replay, a second contribution refused.
    const organizer = await caller(100_000n);
    const members = [await caller(100_000n), await caller(100_000n)];
    const tontine = (await send('tontine create', 'post', '/api/tontines', organizer, { name: 'Scenario circle', currency: 'XOF', contribution_amount: 1000, frequency: 'weekly', max_members: 3, payout_order: 'join_order' })).body.data.id as string;
    for (const [index, member] of members.entries()) {
      await send(`tontine invite ${index + 1}`, 'post', `/api/tontines/${tontine}/invitations`, organizer, { identifier: member.user.email });
      await send(`tontine join ${index + 1}`, 'post', `/api/tontines/${tontine}/join`, member);
    }
    await send('tontine start', 'post', `/api/tontines/${tontine}/start`, organizer);
    const contributionKey = key();
    await send('tontine contribution 1', 'post', `/api/tontines/${tontine}/contributions`, organizer, { cycle: 1 }, contributionKey);
    await send('tontine contribution 1 replayed', 'post', `/api/tontines/${tontine}/contributions`, organizer, { cycle: 1 }, contributionKey);
    await send('tontine contribution 1 again (refused)', 'post', `/api/tontines/${tontine}/contributions`, organizer, { cycle: 1 }, key());
    await send('tontine contribution 2', 'post', `/api/tontines/${tontine}/contributions`, members[0] as TestCaller, { cycle: 1 }, key());
    await send('tontine contribution 3 (pays the pot out)', 'post', `/api/tontines/${tontine}/contributions`, members[1] as TestCaller, { cycle: 1 }, key());
    await send('tontine read', 'get', `/api/tontines/${tontine}`, organizer);

    // Transfers: one to a user, its replay, one refused for insufficient funds.
    const transferKey = key();
    await send('transfer', 'post', '/api/transfers', buyer, { recipientIdentifier: seller.user.email, amount: 1_500, currency: 'XOF', note: 'Scenario' }, transferKey);
    await send('transfer replayed', 'post', '/api/transfers', buyer, { recipientIdentifier: seller.user.email, amount: 1_500, currency: 'XOF', note: 'Scenario' }, transferKey);
    await send('transfer refused (insufficient funds)', 'post', '/api/transfers', poor, { recipientIdentifier: seller.user.email, amount: 1_500, currency: 'XOF' }, key());

    // Escrow: canceled by the buyer while awaiting funding; a fund afterwards refused.
    const canceled = (await send('escrow create (to cancel)', 'post', '/api/escrows', buyer, { role: 'buyer', counterparty_identifier: seller.user.email, amount: 7_000, currency: 'XOF', description: 'Cancel' }, key())).body.data.id as string;
    await send('escrow cancel', 'post', `/api/escrows/${canceled}/cancel`, buyer, {});
    await send('escrow fund after cancel (refused)', 'post', `/api/escrows/${canceled}/fund`, buyer, undefined, key());

    // Top-ups: approved by the sandbox helper, settled by a signed rail callback (a second callback changes nothing), reversed on a frozen wallet, and a replay.
    const rail = new Webhook(DEFAULT_MOBILE_MONEY_CALLBACK_SECRET);
    /** A callback as the rail sends it: the raw body signed (Standard Webhooks) at the services' clock. */
    const signedCallback = async (label: string, raw: string, id: string) => {
      const res = await request(app).post('/api/rails/mobile-money/callbacks').set('Content-Type', 'application/json').set('webhook-id', id)
        .set('webhook-timestamp', String(Math.floor(clock.getTime() / 1000))).set('webhook-signature', rail.sign(id, clock, raw)).send(raw);
      clock = new Date(clock.getTime() + 1000);
      steps.push({ step: label, status: res.status, body: res.body, events: await eventsSince() });
      return res;
    };
    const topper = await caller();
    const topperWallet = (await walletOf(knex, topper.user.id, 'XOF')).id;
    const topUpBody = { amount: 25_000, method: 'mobile_money', provider: 'orange_money', msisdn: '+2250700009999' };
    const topUpKey = key();
    const approved = (await send('top-up create', 'post', `/api/wallets/${topperWallet}/top-ups`, topper, topUpBody, topUpKey)).body.data.id as string;
    await send('top-up create replayed', 'post', `/api/wallets/${topperWallet}/top-ups`, topper, topUpBody, topUpKey);
    await send('top-up approve (sandbox helper)', 'post', `/api/test-helpers/top-ups/${approved}/approve`, null);
    const called = (await send('top-up create (settled by callback)', 'post', `/api/wallets/${topperWallet}/top-ups`, topper, { ...topUpBody, amount: 10_000 }, key())).body.data;
    await signedCallback('top-up callback succeeded', JSON.stringify({ provider_reference: called.provider_reference, status: 'succeeded' }), `msg_${crypto.randomUUID()}`);
    await signedCallback('top-up callback failed after success (changes nothing)', JSON.stringify({ provider_reference: called.provider_reference, status: 'failed', failure_code: 'declined' }), `msg_${crypto.randomUUID()}`);
    await send('top-up read', 'get', `/api/wallets/${topperWallet}/top-ups/${called.id as string}`, topper);
    const frozenTopper = await caller();
    const frozenWallet = (await walletOf(knex, frozenTopper.user.id, 'XOF')).id;
    const reversed = (await send('top-up create (wallet to be frozen)', 'post', `/api/wallets/${frozenWallet}/top-ups`, frozenTopper, topUpBody, key())).body.data;
    await setAccountStatus(knex, frozenWallet, 'frozen');
    await signedCallback('top-up callback succeeded on a frozen wallet (reversed)', JSON.stringify({ provider_reference: reversed.provider_reference, status: 'succeeded' }), `msg_${crypto.randomUUID()}`);

    // An organisation: verified, an account funded from outside, an owner, an admin and a finance manager.
    const org = await createOrganization({ name: 'Scenario shop' });
    await knex('organizations').where({ id: org.id }).update({ verification_status: 'verified', verification_decided_at: clock });
    const account = await createOrgAccount(org, { currency: 'XOF' });
    await moveMoney(account, 3_000_000n);
    const member = async (role: 'owner' | 'admin' | 'finance_manager') => {
      const user = await createMember(org, role);
      const made = { user, auth: bearer(await accessTokenFor(app, user)) };
      users.push(made);
      return made;
    };
    const [owner, orgAdmin, finance] = [await member('owner'), await member('admin'), await member('finance_manager')];
    const business = businessPath(org.id);

    // The public payment page: a one-off link paid with sandbox mobile money, read back through the API.
    const link = (await send('payment link create', 'post', `${business}/payment-links`, owner, { destination_account_id: account.id, amount: 12_500, description: 'Scenario order' })).body.data;
    aliases.push(['link-code', link.code as string]);
    const browser = request.agent(payApp);
    const page = await browser.get(`/pay/${link.code as string}`);
    expect(page.status, page.text).toBe(200);
    const formToken = /name="token" value="([^"]+)"/.exec(page.text)?.[1] as string;
    const paid = await browser.post(`/pay/${link.code as string}`).type('form').send({ token: formToken, method: 'mobile_money', phone: '+225 07 12 34 56 78' });
    clock = new Date(clock.getTime() + 1000);
    const paymentId = /\/payments\/([0-9a-f-]{36})\?/.exec(paid.headers.location as string)?.[1] as string;
    expect(paymentId, paid.text).toBeDefined();
    subjects.add(paymentId);
    steps.push({ step: 'payment page pay (mobile money)', status: paid.status, location: paid.headers.location as string, body: null, events: await eventsSince() });
    await send('payment read', 'get', `${business}/payments/${paymentId}`, owner);

    // Refunds of that payment: a partial one, the rest (full), one more refused, and a replay.
    const refundKey = key();
    await send('refund partial', 'post', `${business}/payments/${paymentId}/refunds`, owner, { amount: 4_000, reason: 'requested_by_customer' }, refundKey);
    await send('refund partial replayed', 'post', `${business}/payments/${paymentId}/refunds`, owner, { amount: 4_000, reason: 'requested_by_customer' }, refundKey);
    await send('refund of the rest', 'post', `${business}/payments/${paymentId}/refunds`, owner, { reason: 'other' }, key());
    await send('refund beyond the payment (refused)', 'post', `${business}/payments/${paymentId}/refunds`, owner, { amount: 1, reason: 'duplicate' }, key());
    await send('payment read after refunds', 'get', `${business}/payments/${paymentId}`, owner);

    // Organisation payouts: paid at once, declined by the rail (failed), one over the threshold approved by another admin and paid, one canceled.
    const destination = { type: 'mobile_money', provider: 'orange_money', msisdn: '+2250700009999' };
    const payout = (label: string, amount: number, by: TestCaller, payoutKey = key()) =>
      send(label, 'post', `${business}/payouts`, by, { account_id: account.id, amount, destination, reference: 'SUPPLIER-1' }, payoutKey);
    const payoutKey = key();
    await payout('payout request (paid at once)', 200_000, finance, payoutKey);
    await payout('payout request replayed', 200_000, finance, payoutKey);
    await payout('payout request (the rail declines: failed)', 100_013, finance);
    const pending = (await payout('payout request (over the threshold: pending approval)', 1_500_000, orgAdmin)).body.data.id as string;
    await send('payout approve by the requester (refused)', 'post', `${business}/payouts/${pending}/approve`, orgAdmin, {});
    await send('payout approve (paid)', 'post', `${business}/payouts/${pending}/approve`, owner, {});
    const toCancel = (await payout('payout request (to cancel)', 1_000_000, finance)).body.data.id as string;
    await send('payout cancel', 'post', `${business}/payouts/${toCancel}/cancel`, finance, {});
    await payout('payout request (insufficient funds, refused)', 5_000_000, finance);

    // Crypto (tier_2): a deposit detected, confirmed and credited; a withdrawal queued, broadcast and completed; a conversion of a quote, its replay and a second use refused.
    const holder = await caller();
    await knex('users').where({ id: holder.user.id }).update({ tier: 'tier_2' });
    const address = (await send('crypto deposit address', 'post', '/api/crypto/deposit-addresses', holder, { asset: 'USDT', network: 'tron' })).body.data.address as string;
    aliases.push(['deposit-address', address]);
    const deposit = (await send('crypto deposit detected (network simulator)', 'post', '/api/test-helpers/crypto/networks/tron/deposits', null, { address, asset: 'USDT', amount: '250' })).body.data.id as string;
    const mine = (label: string, count: number) =>
      job(label, async () => ({ status: (await request(app).post('/api/test-helpers/crypto/networks/tron/blocks').send({ count })).status }));
    await mine('crypto blocks mined (5)', 5);
    await send('crypto deposit read (confirming)', 'get', `/api/crypto/deposits/${deposit}`, holder);
    await mine('crypto blocks mined (15 more: final)', 15);
    await send('crypto deposit read (credited)', 'get', `/api/crypto/deposits/${deposit}`, holder);
    const withdrawalAddress = (await send('crypto withdrawal address', 'post', '/api/crypto/withdrawal-addresses', holder, { asset: 'USDT', network: 'tron', address: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t', label: 'Exchange' })).body.data.id as string;
    await knex('crypto_withdrawal_addresses').where({ id: withdrawalAddress }).update({ active_at: new Date(clock.getTime() - 1000) });
    const withdrawalKey = key();
    const withdrawal = (await send('crypto withdrawal', 'post', '/api/crypto/withdrawals', holder, { withdrawal_address_id: withdrawalAddress, amount: '100' }, withdrawalKey)).body.data.id as string;
    await send('crypto withdrawal replayed', 'post', '/api/crypto/withdrawals', holder, { withdrawal_address_id: withdrawalAddress, amount: '100' }, withdrawalKey);
    await mine('crypto block mined (the withdrawal is broadcast)', 1);
    await mine('crypto blocks mined (20 more: the withdrawal is final)', 20);
    await send('crypto withdrawal read (completed)', 'get', `/api/crypto/withdrawals/${withdrawal}`, holder);
    const quote = (await send('crypto quote', 'post', '/api/crypto/quotes', holder, { from_currency: 'USDT', to_currency: 'XOF', from_amount: '100' })).body.data.id as string;
    const conversionKey = key();
    await send('crypto conversion', 'post', '/api/crypto/conversions', holder, { quote_id: quote }, conversionKey);
    await send('crypto conversion replayed', 'post', '/api/crypto/conversions', holder, { quote_id: quote }, conversionKey);
    await send('crypto conversion of a used quote (refused)', 'post', '/api/crypto/conversions', holder, { quote_id: quote }, key());

    // A payout held for verification (shipped tier caps): a release over the tier_0 seller's cap is held, then completed by the job once the seller is tier_1; another is returned to the buyer by an administrator.
    // Built last: installing the shipped caps sets them in the database, for every app on it.
    const cappedApp = await buildTestApp({ now: () => clock, limitPolicy: SHIPPED_LIMIT_POLICY });
    const overCap = Number(SHIPPED_LIMIT_POLICY.currencies.get('XOF')?.get('tier_0')?.per_transaction) + 1;
    const capped = async (tier: 'tier_0' | 'tier_2', balance?: bigint) => {
      const made = await caller(balance);
      await knex('users').where({ id: made.user.id }).update({ tier });
      return made;
    };
    const heldBuyer = await capped('tier_2', 2_000_000n);
    const heldSeller = await capped('tier_0');
    const heldEscrow = async (label: string) => {
      const id = (await send(`${label}: escrow create`, 'post', '/api/escrows', heldBuyer, { role: 'buyer', counterparty_identifier: heldSeller.user.email, amount: overCap, currency: 'XOF', description: 'Held', fee_payer: 'buyer' }, key(), cappedApp)).body.data.id as string;
      await send(`${label}: escrow fund`, 'post', `/api/escrows/${id}/fund`, heldBuyer, undefined, key(), cappedApp);
      await send(`${label}: escrow deliver`, 'post', `/api/escrows/${id}/deliver`, heldSeller, undefined, undefined, cappedApp);
      const accepted = await send(`${label}: escrow accept (payout held)`, 'post', `/api/escrows/${id}/accept`, heldBuyer, undefined, key(), cappedApp);
      return { id, heldId: accepted.body.data.payout.id as string };
    };
    const completed = await heldEscrow('held then completed');
    await knex('users').where({ id: heldSeller.user.id }).update({ tier: 'tier_1' });
    // Due at the services' clock (the job reads what is due at its own now).
    await knex('held_payouts').where({ id: completed.heldId }).update({ next_attempt_at: new Date(clock.getTime() - 1000) });
    await job('held payout completed by the job (the seller is tier_1)', async () => {
      await cappedApp.services.heldPayouts.completeDue({ batchSize: 10 });
      return null;
    });
    await send('held then completed: escrow read', 'get', `/api/escrows/${completed.id}`, heldSeller, undefined, undefined, cappedApp);
    await knex('users').where({ id: heldSeller.user.id }).update({ tier: 'tier_0' });
    const returned = await heldEscrow('held then returned');
    const returnKey = key();
    const returnBody = { reason: 'The seller could not complete identity verification.' };
    await send('held payout return', 'post', `/api/admin/held-payouts/${returned.heldId}/return`, admin, returnBody, returnKey, cappedApp);
    await send('held payout return replayed', 'post', `/api/admin/held-payouts/${returned.heldId}/return`, admin, returnBody, returnKey, cappedApp);
    await send('held payout return again (refused)', 'post', `/api/admin/held-payouts/${returned.heldId}/return`, admin, returnBody, key(), cappedApp);
    await send('held then returned: escrow read', 'get', `/api/escrows/${returned.id}`, heldBuyer, undefined, undefined, cappedApp);

    const recorded = `${JSON.stringify(normaliser(aliases)(steps), null, 2)}\n`;
    if (process.env.RECORD_MONEY_SCENARIO === '1') {
      fs.mkdirSync(path.dirname(RECORDING), { recursive: true });
      fs.writeFileSync(RECORDING, recorded);
    }
    expect(recorded).toBe(fs.readFileSync(RECORDING, 'utf8'));
    await expectLedgerInvariants(knex);
  }, 600_000);
});
