import crypto from 'node:crypto';
import fc from 'fast-check';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import type { Caller } from '../../src/contract';
import { requestHash, type IdempotencyService } from '../../src/modules/idempotency';
import { fundWallet, setAccountStatus, walletOf } from '../../src/modules/ledger';
import { buildTestApp, type App } from '../support/app';
import { databaseKind, testKnex } from '../support/database';
import { accessTokenFor, bearer, createMember, createOrgAccount, createOrganization, createUser, type TestCaller, type TestUser } from '../support/factories';
import { balanceOf, expectLedgerInvariants } from '../support/ledger-invariants';
import { createTontine, enrol } from '../support/tontines';
import { transferClaim } from '../support/idempotency';

/**
 * Every money path at once, as the pipeline runs each: random concurrent transfers (in
 * windows), escrow steps (create; fund and accept in windows; refund on the one write path
 * alone, one request in one transaction), tontine contributions (in windows) and payments
 * received through a payment link (each settlement in its own transaction), all fired at once,
 * with items that fail on their own (insufficient funds, a frozen wallet, an unknown recipient,
 * a closed cycle), keys sent several times at once, replays of keys acknowledged in earlier runs
 * and, on real PostgreSQL, a window's backend terminated in the middle of its statement
 * (pg_terminate_backend from a test trigger, once per marked transfer or escrow). After every run: each currency's entries sum to zero, no balance is
 * negative, every balance equals its entries (expectLedgerInvariants), and every acknowledged
 * key has exactly one completed idempotency row and exactly one effect (one transfer and one
 * posting; one funding or settlement posting of its escrow; one paid contribution and one
 * posting); a key refused every time has no effect.
 */

const knex = testKnex();
const realServer = databaseKind() === 'postgres';
let app: App;
let users: TestUser[];
let frozen: TestUser;
let members: TestCaller[];
const tontineIds: string[] = [];
let checkoutId: string;
let orgLedgerAccountId: string;
const acknowledgedTransfers: Array<{ from: number; key: string; input: Record<string, unknown>; id: string }> = [];
let killsAsked = 0;
/** The kill sequences created: a kill landed only when its transfer row was inserted or its escrow funded (a refusal never fires the trigger). */
const killSequences: Array<{ sequence: string; batcher: 'transfers' | 'escrows' }> = [];
/** Acknowledged keys per operation over all runs: the runs did move money on every path. */
const acknowledgedPerOperation = new Map<string, number>();

const REFUSED = {
  transfer: ['ConcurrentOperation', 'IdempotencyKeyAlreadyProcessed', 'InsufficientFunds', 'SelfTransfer', 'RecipientNotFound', 'WalletFrozen'],
  escrow: ['ConcurrentOperation', 'IdempotencyKeyAlreadyProcessed', 'InsufficientFunds', 'InvalidEscrowState'],
  contribution: ['ConcurrentOperation', 'IdempotencyKeyAlreadyProcessed', 'InsufficientFunds', 'ContributionAlreadyPaid', 'CycleNotOpen', 'InvalidTontineState'],
};

beforeAll(async () => {
  app = await buildTestApp();
  users = await Promise.all(Array.from({ length: 4 }, () => createUser()));
  frozen = await createUser();
  await withTransaction(knex, async (trx) => {
    for (const user of [...users, frozen]) await fundWallet(trx, user.id, 'XOF', 40_000n);
    await setAccountStatus(trx, (await walletOf(trx, frozen.id, 'XOF')).id, 'frozen');
  });
  // Three tontines of the same three members (the first is each one's organizer), started.
  members = await Promise.all(users.slice(0, 3).map(async (user) => ({ user, auth: bearer(await accessTokenFor(app, user)) })));
  for (let t = 0; t < 3; t += 1) {
    const organizer = members[t] as TestCaller;
    const tontine = await createTontine(app, organizer, { contribution_amount: 700, max_members: 3 });
    await enrol(app, tontine.id, organizer, members.filter((m) => m !== organizer));
    const started = await request(app).post(`/api/tontines/${tontine.id}/start`).set(organizer.auth);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    tontineIds.push(tontine.id);
  }
  const org = await createOrganization();
  const owner = await accessTokenFor(app, await createMember(org, 'owner'));
  const account = await createOrgAccount(org, { currency: 'XOF' });
  orgLedgerAccountId = account.ledgerAccountId;
  const res = await request(app).post(`/api/business/organizations/${org.id}/checkout`).set(bearer(owner)).send({ destination_account_id: account.id });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  checkoutId = res.body.data.id as string;
  if (realServer) {
    // Its own trigger and function (another property test has its own on the same table), kept
    // out of the application's schema: the database-functions test lists that schema's functions.
    await knex.raw(`
      CREATE SCHEMA IF NOT EXISTS test_faults;
      -- One function for every marked row: the trigger names the column that carries the marker.
      CREATE OR REPLACE FUNCTION test_faults.kill_once_mixed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval(substr(to_jsonb(NEW) ->> TG_ARGV[0], length('kill-mixed:') + 1)) = 1 THEN
          PERFORM pg_terminate_backend(pg_backend_pid());
          PERFORM pg_sleep(5);
        END IF;
        RETURN NEW;
      END;
      $$;
      DROP TRIGGER IF EXISTS transfers_test_kill_once_mixed ON transfers;
      CREATE TRIGGER transfers_test_kill_once_mixed AFTER INSERT ON transfers FOR EACH ROW
        WHEN (NEW.note LIKE 'kill-mixed:%') EXECUTE FUNCTION test_faults.kill_once_mixed('note');
      -- The same for the escrows' windows: an escrow marked in its description kills the backend
      -- of the window that funds it, once (after its funding posting, before the window commits).
      DROP TRIGGER IF EXISTS escrows_test_kill_once_mixed ON escrows;
      CREATE TRIGGER escrows_test_kill_once_mixed AFTER UPDATE ON escrows FOR EACH ROW
        WHEN (NEW.status = 'funded' AND OLD.status <> 'funded' AND NEW.description LIKE 'kill-mixed:%') EXECUTE FUNCTION test_faults.kill_once_mixed('description');
    `);
  }
});

afterAll(async () => {
  if (realServer) await knex.raw('DROP TRIGGER IF EXISTS transfers_test_kill_once_mixed ON transfers; DROP TRIGGER IF EXISTS escrows_test_kill_once_mixed ON escrows');
});

type Step =
  | { kind: 'transfer'; from: number; to: number | 'nobody' | 'frozen'; minor: bigint; sends: number; kill: boolean }
  | { kind: 'replay'; pick: number }
  | { kind: 'escrow'; buyer: number; seller: number; minor: bigint; fundSends: number; then: 'accept' | 'refund' | 'stop'; settleSends: number; kill: boolean }
  | { kind: 'contribution'; member: number; tontine: number; sends: number }
  | { kind: 'payment'; minor: bigint };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('transfer' as const),
      from: fc.nat({ max: 3 }),
      to: fc.constantFrom<number | 'nobody' | 'frozen'>(0, 1, 2, 3, 'nobody', 'frozen'),
      minor: fc.bigInt({ min: 1n, max: 15_000n }),
      sends: fc.integer({ min: 1, max: 3 }),
      kill: realServer ? fc.integer({ min: 0, max: 9 }).map((n) => n < 2) : fc.constant(false),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('replay' as const), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('escrow' as const),
      buyer: fc.nat({ max: 3 }),
      seller: fc.nat({ max: 3 }),
      minor: fc.bigInt({ min: 1n, max: 20_000n }),
      fundSends: fc.integer({ min: 1, max: 2 }),
      then: fc.constantFrom('accept' as const, 'refund' as const, 'stop' as const),
      settleSends: fc.integer({ min: 1, max: 2 }),
      kill: realServer ? fc.integer({ min: 0, max: 9 }).map((n) => n < 2) : fc.constant(false),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('contribution' as const), member: fc.nat({ max: 2 }), tontine: fc.nat({ max: 2 }), sends: fc.integer({ min: 1, max: 2 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('payment' as const), minor: fc.bigInt({ min: 1n, max: 3_000n }) }) },
);

/** Sends the same call `sends` times at once: the one id every success names (at most one), after checking each refusal is one of `allowed`. */
async function sameKeyAtOnce(sends: number, allowed: readonly string[], call: () => Promise<{ id: string }>): Promise<string | undefined> {
  const outcomes = await Promise.allSettled(Array.from({ length: sends }, call));
  const ids = new Set<string>();
  for (const outcome of outcomes) {
    if (outcome.status === 'fulfilled') ids.add(outcome.value.id);
    else expect(allowed, String((outcome.reason as Error).stack)).toContain((outcome.reason as { code?: string }).code);
  }
  expect(ids.size).toBeLessThanOrEqual(1);
  return [...ids][0];
}

/** What one key may have done: its idempotency row and the count of its effects. */
interface SentKey {
  key: string;
  operation: string;
  /** The resource the acknowledged call named; undefined when every send was refused. */
  acknowledged: string | undefined;
  /** The postings that are its effect (kind, reference), and the rows of its resource. */
  effect: { postingKind: string; reference: () => string | undefined; resourceTable?: string };
}

/** POST /escrows/{id}/refund as the pipeline runs it: on the one write path alone, its key claimed in its locked read, in one transaction. */
function refundAlone(idempotency: IdempotencyService, seller: Caller, escrowId: string, key: string): Promise<{ id: string }> {
  return idempotency.perform(
    { userId: seller.userId, operation: 'refundEscrow', key, request: { path: { escrowId } } },
    async (trx) => {
      const view = await app.services.escrows.act(trx, seller, escrowId, { action: 'refund' });
      return { result: view, responseStatus: 200, resource: { type: 'escrow', id: view.id, status: view.status, location: `/api/escrows/${view.id}` } };
    },
    { responseStatus: 200 },
  );
}

/** A fresh kill marker: the first statement that fires its trigger terminates its backend; its sequence says whether that happened. */
async function killMarker(batcher: 'transfers' | 'escrows'): Promise<string> {
  const sequence = `test_faults.kill_mixed_${crypto.randomBytes(6).toString('hex')}`;
  await knex.raw(`CREATE SEQUENCE ${sequence}`);
  killsAsked += 1;
  killSequences.push({ sequence, batcher });
  return `kill-mixed:${sequence}`;
}

async function runStep(step: Step, sent: SentKey[]): Promise<bigint> {
  if (step.kind === 'payment') {
    const payment = await app.services.payments.start({
      linkId: checkoutId,
      nonce: crypto.randomUUID(),
      amountMinor: step.minor,
      reference: null,
      payer: { method: 'mobile_money', last4: '9999', decision: { outcome: 'succeeded', delayed: false } },
    });
    expect(payment.status).toBe('succeeded');
    return step.minor;
  }
  if (step.kind === 'replay') {
    const earlier = acknowledgedTransfers[step.pick % Math.max(1, acknowledgedTransfers.length)];
    if (!earlier) return 0n;
    const error = await app.services.transfers.create({ userId: (users[earlier.from] as TestUser).id }, transferClaim(earlier.key, earlier.input), earlier.input as never).then(
      () => undefined,
      (reason: unknown) => reason as { code?: string; details?: { resource_id?: string } },
    );
    expect({ code: error?.code, id: error?.details?.resource_id }).toEqual({ code: 'IdempotencyKeyAlreadyProcessed', id: earlier.id });
    return 0n;
  }
  if (step.kind === 'transfer') {
    const from = users[step.from] as TestUser;
    const to = (typeof step.to === 'number' ? (users[step.to] as TestUser).email : step.to === 'frozen' ? frozen.email : `nobody-${crypto.randomUUID()}@test.example`) as string;
    const key = crypto.randomUUID();
    const note = step.kill ? await killMarker('transfers') : undefined;
    const input = { amount: Number(step.minor), currency: 'XOF', recipientIdentifier: to, ...(note ? { note } : {}) };
    const id = await sameKeyAtOnce(step.sends, REFUSED.transfer, () => app.services.transfers.create({ userId: from.id }, transferClaim(key, input), input));
    sent.push({ key, operation: 'createTransfer', acknowledged: id, effect: { postingKind: 'transfer.p2p', reference: () => id, resourceTable: 'transfers' } });
    if (id) acknowledgedTransfers.push({ from: step.from, key, input, id });
    return 0n;
  }
  if (step.kind === 'escrow') {
    const buyer: Caller = { userId: (users[step.buyer] as TestUser).id, sessionId: '', isAdmin: false };
    const seller: Caller = { userId: (users[step.seller] as TestUser).id, sessionId: '', isAdmin: false };
    if (buyer.userId === seller.userId) return 0n;
    const escrow = await app.services.escrows.create(knex, buyer, {
      role: 'buyer',
      counterpartyIdentifier: (users[step.seller] as TestUser).email as string,
      amount: Number(step.minor),
      currency: 'XOF',
      description: step.kill ? await killMarker('escrows') : 'Mixed property test',
    });
    const path = { escrowId: escrow.id };
    // As the pipeline runs fund and accept (APPLIED_IN_WINDOW): the key handed over to the escrows' window.
    const inWindow = (actor: Caller, action: 'fund' | 'accept', key: string) => () =>
      app.services.escrows.actInWindow(app.services.idempotency.pendingKey({ userId: actor.userId, operation: `${action}Escrow`, key, requestHash: requestHash({ path }) }, 200), actor, escrow.id, action);
    const fundKey = crypto.randomUUID();
    const funded = await sameKeyAtOnce(step.fundSends, REFUSED.escrow, inWindow(buyer, 'fund', fundKey));
    sent.push({ key: fundKey, operation: 'fundEscrow', acknowledged: funded, effect: { postingKind: 'escrow.funding', reference: () => escrow.id } });
    if (step.then === 'stop') return 0n;
    const settleKey = crypto.randomUUID();
    const settled = await sameKeyAtOnce(
      step.settleSends,
      REFUSED.escrow,
      step.then === 'accept' ? inWindow(buyer, 'accept', settleKey) : () => refundAlone(app.services.idempotency, seller, escrow.id, settleKey),
    );
    // An escrow that was never funded cannot settle.
    if (!funded) expect(settled).toBeUndefined();
    sent.push({ key: settleKey, operation: step.then === 'accept' ? 'acceptEscrow' : 'refundEscrow', acknowledged: settled, effect: { postingKind: 'escrow.settlement', reference: () => escrow.id } });
    return 0n;
  }
  const member = members[step.member] as TestCaller;
  const tontineId = tontineIds[step.tontine] as string;
  const cycle = Math.max(1, ((await knex('tontines').where({ id: tontineId }).first('current_cycle')) as { current_cycle: number }).current_cycle);
  const key = crypto.randomUUID();
  let contributionId: string | undefined;
  const paid = await sameKeyAtOnce(step.sends, REFUSED.contribution, async () => {
    // As the pipeline runs POST /tontines/{id}/contributions, a window at a time: the key handed
    // over, claimed and completed by the statement that applies the window, naming the contribution paid.
    const pending = app.services.idempotency.pendingKey({ userId: member.user.id, operation: 'contributeToTontine', key, requestHash: requestHash({ path: { tontineId }, body: { cycle } }) }, 200);
    const { tontine } = await app.services.tontines.contributeInWindow(pending, { userId: member.user.id }, tontineId, { cycle });
    return { id: tontine.id };
  });
  if (paid) {
    const row = (await knex('idempotency_keys').where({ key, operation: 'contributeToTontine' }).first('resource_id')) as { resource_id: string } | undefined;
    contributionId = row?.resource_id;
  }
  sent.push({ key, operation: 'contributeToTontine', acknowledged: paid, effect: { postingKind: 'tontine.contribution', reference: () => contributionId, resourceTable: 'tontine_contributions' } });
  return 0n;
}

describe('every money path at once, with failures and a killed window (property)', () => {
  it('conserves money per currency, never goes negative, and gives every acknowledged key exactly one effect', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 2, maxLength: 16 }), async (steps) => {
        const orgBefore = await balanceOf(knex, orgLedgerAccountId);
        const sent: SentKey[] = [];
        const received = (await Promise.all(steps.map((step) => runStep(step, sent)))).reduce((sum, minor) => sum + minor, 0n);

        for (const { key, operation, acknowledged, effect } of sent) {
          const rows = await knex('idempotency_keys').where({ key, operation }).select('status');
          if (acknowledged === undefined) {
            // Refused every time: the key is free (or names no finished effect) and nothing moved for it.
            expect(rows.filter((row: { status: string }) => row.status === 'completed'), `${operation} ${key}`).toEqual([]);
            continue;
          }
          expect(rows, `${operation} ${key}`).toEqual([{ status: 'completed' }]);
          acknowledgedPerOperation.set(operation, (acknowledgedPerOperation.get(operation) ?? 0) + 1);
          const reference = effect.reference();
          expect(reference, `${operation} ${key}`).toBeDefined();
          expect(await knex('postings').where({ kind: effect.postingKind, reference }), `${operation} ${key}`).toHaveLength(1);
          if (effect.resourceTable) expect(await knex(effect.resourceTable).where({ id: reference }), `${operation} ${key}`).toHaveLength(1);
        }
        expect(await balanceOf(knex, orgLedgerAccountId)).toBe(orgBefore + received);
        await expectLedgerInvariants(knex);
      }),
      {
        numRuns: 8,
        // First, a run that surely kills an escrows' window (on real PostgreSQL): two marked
        // escrows funded at the same time as other postings and transfers; one funding sent three
        // times at once, so that the two sends behind the first share a window whatever the back-end.
        examples: [
          [
            [
              { kind: 'escrow', buyer: 0, seller: 1, minor: 1_000n, fundSends: 3, then: 'accept', settleSends: 1, kill: realServer },
              { kind: 'escrow', buyer: 2, seller: 3, minor: 1_500n, fundSends: 1, then: 'refund', settleSends: 2, kill: realServer },
              { kind: 'escrow', buyer: 1, seller: 0, minor: 700n, fundSends: 1, then: 'accept', settleSends: 1, kill: false },
              { kind: 'contribution', member: 0, tontine: 0, sends: 2 },
              { kind: 'payment', minor: 300n },
              { kind: 'transfer', from: 3, to: 2, minor: 100n, sends: 1, kill: false },
            ],
          ],
        ],
      },
    );
    for (const operation of ['createTransfer', 'fundEscrow', 'contributeToTontine']) expect(acknowledgedPerOperation.get(operation) ?? 0, operation).toBeGreaterThan(0);
    // Transfers fired together shared windows, and so did escrow fundings and accepts; on real
    // PostgreSQL a killed window (of transfers or of escrows) was answered item by item.
    const transfers = app.services.transfers.batcher;
    const escrows = app.services.escrows.window.batcher;
    expect(transfers.sizes.length - 1).toBeGreaterThan(1);
    expect(escrows.sizes.length - 1).toBeGreaterThan(1);
    const killsLanded = { transfers: 0, escrows: 0 };
    for (const { sequence, batcher } of killSequences) {
      if (((await knex.raw(`SELECT is_called FROM ${sequence}`)).rows[0] as { is_called: boolean }).is_called) killsLanded[batcher] += 1;
    }
    expect(killsLanded.transfers + killsLanded.escrows).toBeLessThanOrEqual(killsAsked);
    if (killsLanded.transfers > 0) expect(transfers.batchesFailed).toBeGreaterThan(0);
    // A marked escrow's funding runs first in a window: the first kill to land fails that window
    // (a later one may land in a request's run alone, which retries it on a new connection).
    if (killsLanded.escrows > 0) expect(escrows.batchesFailed).toBeGreaterThan(0);
    // On real PostgreSQL the runs did kill an escrows' window mid-way (about one escrow in five is marked).
    if (realServer) expect(killsLanded.escrows).toBeGreaterThan(0);
  });
});
