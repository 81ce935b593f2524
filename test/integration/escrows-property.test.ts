import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import type { Caller } from '../../src/contract';
import type { EscrowCommand } from '../../src/modules/escrows';
import { formatMinor, fundWallet } from '../../src/modules/ledger';
import { buildTestApp, type App } from '../support/app';
import { databaseKind, testKnex } from '../support/database';
import { createUser, walletBalance } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { expectEscrowMoneyConsistent, platformBalance } from '../support/escrows';

/**
 * Random sequences of escrow actions by random parties (and strangers and an administrator),
 * with the automatic release driven by an injected clock, over many escrows. The expected
 * outcome of every step comes from a model written here from the rules, not from the
 * service's code; after every step the database must match the model (statuses and every
 * wallet), the holding account must equal what is held, money must be conserved and a fee
 * charged at most once, by the release of the escrow it belongs to.
 */

/** TND (3 decimals): no other test file uses it. */
const CURRENCY = 'TND';
const EXPONENT = 3;
const FEE_BPS = 100n;
const INSPECTION_MS = 259_200_000;
const STARTING_BALANCE = 1_500_000n;
const knex = testKnex();

let app: App;
let clock = new Date('2031-01-01T00:00:00Z');
const parties: Caller[] = [];
let admin: Caller;
let stranger: Caller;
const partyEmails = new Map<string, string>();

type Status = 'awaiting_funding' | 'funded' | 'delivered' | 'disputed' | 'released' | 'refunded' | 'canceled';
type Action = 'fund' | 'deliver' | 'accept' | 'dispute' | 'refund' | 'cancel' | 'resolve';
type FeePayer = 'buyer' | 'seller' | 'split';

interface ModelEscrow {
  id: string;
  buyer: string;
  seller: string;
  amount: bigint;
  feePayer: FeePayer;
  status: Status;
  inspectionEndsAt: number | null;
}

/** The model of the world: every escrow of this file and every party's wallet, fees and holding. */
const model = { escrows: [] as ModelEscrow[], wallets: new Map<string, bigint>(), fees: 0n, holding: 0n };

const WHO_MAY: Record<Action, ReadonlyArray<'buyer' | 'seller' | 'admin'>> = {
  fund: ['buyer'],
  deliver: ['seller'],
  accept: ['buyer'],
  dispute: ['buyer'],
  refund: ['seller'],
  cancel: ['buyer', 'seller'],
  resolve: ['admin'],
};
const USUAL_ACTOR: Record<Action, 'buyer' | 'seller' | 'admin'> = {
  fund: 'buyer',
  deliver: 'seller',
  accept: 'buyer',
  dispute: 'buyer',
  refund: 'seller',
  cancel: 'seller',
  resolve: 'admin',
};
const FROM: Record<Action, readonly Status[]> = {
  fund: ['awaiting_funding'],
  deliver: ['funded'],
  accept: ['funded', 'delivered'],
  dispute: ['funded', 'delivered'],
  refund: ['funded', 'delivered', 'disputed'],
  cancel: ['awaiting_funding'],
  resolve: ['disputed'],
};

/** The fee: 1 % rounded up to the minor unit (never zero); split puts the odd unit on the buyer. */
function shares(amount: bigint, payer: FeePayer): { total: bigint; buyer: bigint; seller: bigint } {
  const total = (amount * FEE_BPS + 9_999n) / 10_000n;
  if (payer === 'buyer') return { total, buyer: total, seller: 0n };
  if (payer === 'seller') return { total, buyer: 0n, seller: total };
  return { total, buyer: total - total / 2n, seller: total / 2n };
}

const credit = (userId: string, amount: bigint) => model.wallets.set(userId, (model.wallets.get(userId) ?? 0n) + amount);

function paidIn(escrow: ModelEscrow): bigint {
  return escrow.amount + shares(escrow.amount, escrow.feePayer).buyer;
}

function releaseInModel(escrow: ModelEscrow): void {
  const fee = shares(escrow.amount, escrow.feePayer);
  model.holding -= paidIn(escrow);
  credit(escrow.seller, escrow.amount - fee.seller);
  model.fees += fee.total;
  escrow.status = 'released';
}

function refundInModel(escrow: ModelEscrow): void {
  model.holding -= paidIn(escrow);
  credit(escrow.buyer, paidIn(escrow));
  escrow.status = 'refunded';
}

function splitInModel(escrow: ModelEscrow, sellerAmount: bigint): void {
  const fee = shares(sellerAmount, escrow.feePayer);
  const toSeller = sellerAmount - fee.seller;
  model.holding -= paidIn(escrow);
  credit(escrow.seller, toSeller);
  credit(escrow.buyer, paidIn(escrow) - toSeller - fee.total);
  model.fees += fee.total;
  escrow.status = 'released';
}

type Step =
  | { kind: 'create'; buyer: number; seller: number; byBuyer: boolean; amount: number; feePayer: FeePayer }
  | { kind: 'act'; escrow: number; actor: 'buyer' | 'seller' | 'admin' | 'stranger'; action: Action; outcome: 'release' | 'refund' | 'split'; permille: number }
  | { kind: 'tick'; seconds: number }
  | { kind: 'release' };

const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('create' as const),
      buyer: fc.nat(3),
      seller: fc.nat(3),
      byBuyer: fc.boolean(),
      amount: fc.integer({ min: 1, max: 900_000 }),
      feePayer: fc.constantFrom<FeePayer>('buyer', 'seller', 'split'),
    }),
  },
  {
    weight: 8,
    arbitrary: fc
      .record({
        escrow: fc.nat(1_000),
        // Mostly the party the action belongs to (so escrows move forward), sometimes anyone.
        usual: fc.boolean(),
        anyone: fc.constantFrom('buyer' as const, 'seller' as const, 'admin' as const, 'stranger' as const),
        action: fc.constantFrom<Action>('fund', 'fund', 'deliver', 'deliver', 'accept', 'dispute', 'refund', 'cancel', 'resolve', 'resolve'),
        outcome: fc.constantFrom('release' as const, 'refund' as const, 'split' as const),
        permille: fc.integer({ min: 0, max: 1_000 }),
      })
      .map(({ usual, anyone, ...rest }): Step => ({ kind: 'act', ...rest, actor: usual ? USUAL_ACTOR[rest.action] : anyone })),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('tick' as const), seconds: fc.integer({ min: 0, max: 4 * 86_400 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('release' as const) }) },
);

/** The error code the model expects for an action, or null when it must succeed. */
function expectedRefusal(escrow: ModelEscrow, actor: Step & { kind: 'act' }, sellerAmount: bigint): string | null {
  const role = actor.actor === 'buyer' ? 'buyer' : actor.actor === 'seller' ? 'seller' : actor.actor === 'admin' ? 'admin' : null;
  if (role === null) return 'NotFound';
  if (!WHO_MAY[actor.action].includes(role)) return 'InsufficientRole';
  const lateDispute = actor.action === 'dispute' && escrow.status === 'delivered' && clock.getTime() >= (escrow.inspectionEndsAt as number);
  if (!FROM[actor.action].includes(escrow.status) || lateDispute) return 'InvalidEscrowState';
  if (actor.action === 'fund' && (model.wallets.get(escrow.buyer) ?? 0n) < paidIn(escrow)) return 'InsufficientFunds';
  if (actor.action === 'resolve' && actor.outcome === 'split' && (sellerAmount <= 0n || sellerAmount >= escrow.amount)) return 'ValidationError';
  return null;
}

async function runStep(step: Step): Promise<void> {
  const service = app.services.escrows;
  if (step.kind === 'tick') {
    clock = new Date(clock.getTime() + step.seconds * 1000);
    return;
  }
  if (step.kind === 'release') {
    await service.releaseDue({ batchSize: 1_000 });
    for (const escrow of model.escrows) {
      if (escrow.status === 'delivered' && (escrow.inspectionEndsAt as number) <= clock.getTime()) releaseInModel(escrow);
    }
    return;
  }
  if (step.kind === 'create') {
    const buyer = parties[step.buyer] as Caller;
    const seller = parties[step.seller] as Caller;
    const creator = step.byBuyer ? buyer : seller;
    const counterparty = step.byBuyer ? seller : buyer;
    const attempt = service.create(testKnex(), creator, {
      role: step.byBuyer ? 'buyer' : 'seller',
      counterpartyIdentifier: partyEmails.get(counterparty.userId) as string,
      amount: formatMinor(BigInt(step.amount), EXPONENT),
      currency: CURRENCY,
      description: 'Property test',
      feePayer: step.feePayer,
    });
    if (buyer.userId === seller.userId) {
      await expect(attempt).rejects.toMatchObject({ code: 'SelfEscrow' });
      return;
    }
    const view = await attempt;
    expect(view.status).toBe('awaiting_funding');
    model.escrows.push({ id: view.id, buyer: buyer.userId, seller: seller.userId, amount: BigInt(step.amount), feePayer: step.feePayer, status: 'awaiting_funding', inspectionEndsAt: null });
    return;
  }
  if (model.escrows.length === 0) return;
  // One of the five newest escrows: older ones are mostly finished.
  const escrow = model.escrows[model.escrows.length - 1 - (step.escrow % Math.min(5, model.escrows.length))] as ModelEscrow;
  const caller =
    step.actor === 'buyer'
      ? (parties.find((p) => p.userId === escrow.buyer) as Caller)
      : step.actor === 'seller'
        ? (parties.find((p) => p.userId === escrow.seller) as Caller)
        : step.actor === 'admin'
          ? admin
          : stranger;
  const sellerAmount = (escrow.amount * BigInt(step.permille)) / 1_000n;
  const command: EscrowCommand =
    step.action === 'deliver'
      ? { action: 'deliver' }
      : step.action === 'dispute'
        ? { action: 'dispute', reason: 'Not as described' }
        : step.action === 'resolve'
          ? { action: 'resolve', outcome: step.outcome, ...(step.outcome === 'split' ? { sellerAmount: formatMinor(sellerAmount, EXPONENT) } : {}) }
          : { action: step.action };
  const refusal = expectedRefusal(escrow, step, sellerAmount);
  const attempt = service.act(testKnex(), caller, escrow.id, command);
  if (refusal) {
    await expect(attempt, `${step.action} by ${step.actor} on ${escrow.status}`).rejects.toMatchObject({ code: refusal });
    return;
  }
  const view = await attempt;
  switch (step.action) {
    case 'fund':
      credit(escrow.buyer, -paidIn(escrow));
      model.holding += paidIn(escrow);
      escrow.status = 'funded';
      break;
    case 'deliver':
      escrow.status = 'delivered';
      escrow.inspectionEndsAt = clock.getTime() + INSPECTION_MS;
      break;
    case 'accept':
      releaseInModel(escrow);
      break;
    case 'dispute':
      escrow.status = 'disputed';
      break;
    case 'refund':
      refundInModel(escrow);
      break;
    case 'cancel':
      escrow.status = 'canceled';
      break;
    case 'resolve':
      if (step.outcome === 'release') releaseInModel(escrow);
      else if (step.outcome === 'refund') refundInModel(escrow);
      else splitInModel(escrow, sellerAmount);
      break;
  }
  expect(view.status, `${step.action} by ${step.actor}`).toBe(escrow.status);
}

/** The database against the model, and the money invariants. */
async function expectWorldMatchesModel(): Promise<void> {
  const rows = (await knex('escrows').whereIn('id', model.escrows.map((e) => e.id)).select('id', 'status')) as Array<{ id: string; status: string }>;
  const actual = new Map(rows.map((row) => [row.id, row.status]));
  for (const escrow of model.escrows) expect({ id: escrow.id, status: actual.get(escrow.id) }).toEqual({ id: escrow.id, status: escrow.status });
  for (const party of parties) {
    expect({ party: party.userId, balance: await walletBalance(party.userId, CURRENCY) }).toEqual({ party: party.userId, balance: model.wallets.get(party.userId) });
  }
  expect(await platformBalance(knex, 'escrow_holding', CURRENCY)).toBe(model.holding);
  expect(await platformBalance(knex, 'fees', CURRENCY)).toBe(model.fees);
  // Conservation: what the parties were given is in their wallets, held, or taken as fees.
  const wallets = [...model.wallets.values()].reduce((sum, balance) => sum + balance, 0n);
  expect(wallets + model.holding + model.fees).toBe(STARTING_BALANCE * BigInt(parties.length));
  await expectEscrowMoneyConsistent(knex, CURRENCY);
}

beforeAll(async () => {
  app = await buildTestApp({ now: () => clock });
  for (let i = 0; i < 4; i += 1) {
    const user = await createUser();
    parties.push({ userId: user.id, sessionId: '', isAdmin: false });
    partyEmails.set(user.id, user.email as string);
    await withTransaction(knex, (trx) => fundWallet(trx, user.id, CURRENCY, STARTING_BALANCE));
    model.wallets.set(user.id, STARTING_BALANCE);
  }
  admin = { userId: (await createUser({ isAdmin: true })).id, sessionId: '', isAdmin: true };
  stranger = { userId: (await createUser()).id, sessionId: '', isAdmin: false };
  model.holding = await platformBalance(knex, 'escrow_holding', CURRENCY);
  model.fees = await platformBalance(knex, 'fees', CURRENCY);
  expect([model.holding, model.fees]).toEqual([0n, 0n]);
});

describe('escrow money under random actions', () => {
  it('after every step the database matches the model, the holding account equals what is held, money is conserved and each fee is charged once', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArbitrary, { minLength: 5, maxLength: 40 }), async (steps) => {
        for (const step of steps) {
          await runStep(step);
          await expectWorldMatchesModel();
        }
        await expectLedgerInvariants(knex);
      }),
      // The model and the database carry over from run to run: a failure is reported as found, unshrunk.
      { numRuns: databaseKind() === 'embedded' ? 15 : 20, endOnFailure: true },
    );
    // Hundreds of database steps, each followed by a full check.
  }, 300_000);
});
