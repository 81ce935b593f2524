import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { setAccountStatus, walletOf } from '../../src/modules/ledger';
import { buildTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { createCaller, type TestCaller } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';

/**
 * A scripted scenario of every money operation on the write path (escrow actions, tontine
 * contributions with a payout, transfers), replays and refusals included: what each request
 * answers (status, Location, body) and every event it records (type, payload, data) are held,
 * byte for byte, to a recording (fixtures/money-scenario.json). Ids, e-mail addresses,
 * telephone numbers and random commitments are numbered in order of appearance and the services' clock moves one
 * second per request, so the recording is the same on every run and both back-ends; a change
 * of the write path that changes one byte of a response or an event fails here.
 * `RECORD_MONEY_SCENARIO=1` writes the recording again (a deliberate change of the contract).
 */
const RECORDING = path.join(__dirname, 'fixtures', 'money-scenario.json');
const START = Math.ceil(Date.now() / 1000) * 1000;
const knex = testKnex();
let app: App;
let clock = new Date(START);

beforeAll(async () => {
  app = await buildTestApp({ now: () => clock });
});

type Step = { step: string; status: number; location?: string; body: unknown; events: unknown[] };

/** Rewrites what differs from run to run (ids, identifiers, random commitments, database times) into numbered names. */
function normaliser(): (value: unknown) => unknown {
  const names = new Map<string, string>();
  const name = (kind: string, raw: string) => {
    const key = `${kind}:${raw}`;
    if (!names.has(key)) names.set(key, `<${kind}-${[...names.keys()].filter((k) => k.startsWith(`${kind}:`)).length + 1}>`);
    return names.get(key) as string;
  };
  const text = (value: string): string =>
    value
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
    /** One request, then the events recorded since the previous one (of the scenario's users' objects). */
    const send = async (label: string, method: 'post' | 'get', url: string, by: TestCaller, body?: object, key?: string) => {
      let call = request(app)[method](url).set(by.auth);
      if (key) call = call.set('Idempotency-Key', key);
      const res = body === undefined ? await call : await call.send(body);
      clock = new Date(clock.getTime() + 1000);
      const produced = (res.body as { data?: { id?: unknown } }).data?.id;
      if (typeof produced === 'string') subjects.add(produced);
      const mine = [...new Set(users.map((u) => u.user.id))];
      // The scenario's own events: by its users, or about its objects (another file's release job writes events of its own escrows).
      const rows = (await knex('events').where((q) => q.whereIn('actor_user_id', mine).orWhereIn('subject_id', [...subjects]))
        .orderBy([{ column: 'occurred_at' }, { column: 'subject_id' }, { column: 'object_sequence' }]).select('id', 'subject_type', 'subject_id', 'type', 'actor_user_id', 'payload', 'data', 'occurred_at', 'object_sequence')) as Array<{ id: string; [k: string]: unknown }>;
      const events = rows
        .filter((row) => !seen.has(row.id) && seen.add(row.id))
        .map(({ id: _id, occurred_at, ...row }) => ({ ...row, occurred_at: (occurred_at as Date).toISOString() }));
      steps.push({ step: label, status: res.status, ...(res.headers.location ? { location: res.headers.location as string } : {}), body: res.body, events });
      return res;
    };
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

    const recorded = `${JSON.stringify(normaliser()(steps), null, 2)}\n`;
    if (process.env.RECORD_MONEY_SCENARIO === '1') {
      fs.mkdirSync(path.dirname(RECORDING), { recursive: true });
      fs.writeFileSync(RECORDING, recorded);
    }
    expect(recorded).toBe(fs.readFileSync(RECORDING, 'utf8'));
    await expectLedgerInvariants(knex);
  });
});
