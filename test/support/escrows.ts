import crypto from 'node:crypto';
import type { Knex } from 'knex';
import request from 'supertest';
import { expect } from 'vitest';
import type { App } from './app';
import { HELD_STATUSES, type CreateEscrowInput, type EscrowService, type EscrowView } from '../../src/modules/escrows';
import { createCaller, createUser, fundedUser, serviceCaller, type TestCaller, type TestUser } from './factories';
import { testKnex } from './database';

/** What a test's escrow is unless it says otherwise: the buyer opens it, 500,000 XOF. */
export const ESCROW_BODY = { role: 'buyer', amount: 500_000, currency: 'XOF', description: 'Used delivery motorbike' } as const;

/** The actions that move money, and so take an Idempotency-Key. */
const MONEY_ACTIONS = new Set(['fund', 'accept', 'refund', 'resolve']);

/** POST /escrows as `by` with `body` as it is, under a new Idempotency-Key unless `key` is given (null: none). */
export function createEscrow(app: App, by: TestCaller, body: object, key: string | null = crypto.randomUUID()) {
  const call = request(app).post('/api/escrows').set(by.auth);
  return (key === null ? call : call.set('Idempotency-Key', key)).send(body);
}

/** POST /escrows/{id}/{action}; a key for the money-moving ones unless told; no body unless given. */
export function escrowAction(app: App, by: TestCaller, id: string, action: string, body?: object, key: string | null = MONEY_ACTIONS.has(action) ? crypto.randomUUID() : null) {
  let call = request(app).post(`/api/escrows/${id}/${action}`).set(by.auth);
  if (key !== null) call = call.set('Idempotency-Key', key);
  return body === undefined ? call : call.send(body);
}

/** An escrow `buyer` opens with `seller` as counterparty (ESCROW_BODY with `overrides`): 201, and the escrow as answered. */
export async function openEscrow(app: App, buyer: TestCaller, seller: TestCaller, overrides: object = {}): Promise<{ id: string; [key: string]: unknown }> {
  const res = await createEscrow(app, buyer, { ...ESCROW_BODY, counterparty_identifier: seller.user.email, ...overrides });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

/** An escrow brought to `status` through the API by new parties (the buyer funded with 1,000,000 XOF), with `overrides` on ESCROW_BODY. */
export async function escrowIn(
  app: App,
  status: 'awaiting_funding' | 'funded' | 'delivered' | 'disputed' | 'released',
  overrides: object = {},
): Promise<{ id: string; buyer: TestCaller; seller: TestCaller; escrow: { id: string; [key: string]: unknown } }> {
  const buyer = await createCaller(app, { XOF: 1_000_000n });
  const seller = await createCaller(app);
  let escrow = await openEscrow(app, buyer, seller, overrides);
  const { id } = escrow;
  const step = async (by: TestCaller, action: string, body?: object) => {
    const res = await escrowAction(app, by, id, action, body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    escrow = res.body.data;
  };
  if (status !== 'awaiting_funding') await step(buyer, 'fund');
  if (status === 'delivered' || status === 'disputed') await step(seller, 'deliver');
  if (status === 'disputed') await step(buyer, 'dispute', { reason: 'Not as described' });
  if (status === 'released') await step(buyer, 'accept');
  return { id, buyer, seller, escrow };
}

/** What a service-made escrow is unless told otherwise: 10,000 XOF, the buyer opens it. */
export const SERVICE_ESCROW_INPUT = { role: 'buyer', amount: 10_000, currency: 'XOF', description: 'Test escrow' } as const;

export interface ServiceEscrowOptions {
  /** Where it is taken through the escrow service (awaiting_funding unless told). */
  status?: 'awaiting_funding' | 'funded' | 'delivered' | 'disputed';
  /** The new buyer's wallet in the escrow's currency, minor units (none unless told). */
  buyerBalance?: bigint;
  /** Parties to use instead of new ones. */
  buyer?: TestUser;
  seller?: TestUser;
  /** On SERVICE_ESCROW_INPUT (the seller's e-mail is the counterparty unless given). */
  input?: Partial<CreateEscrowInput>;
  /** Where the service writes (the file's database unless told). */
  db?: Knex | Knex.Transaction;
}

/**
 * An escrow made through `escrows` directly (no HTTP): the buyer opens it with the seller as
 * counterparty, then funds it, the seller delivers and the buyer disputes, as far as `status`.
 * New parties unless given; the escrow as the last step answered.
 */
export async function escrowThroughService(escrows: EscrowService, options: ServiceEscrowOptions = {}): Promise<{ id: string; escrow: EscrowView; buyer: TestUser; seller: TestUser }> {
  const db = options.db ?? testKnex();
  const input = { ...SERVICE_ESCROW_INPUT, ...options.input };
  const buyer = options.buyer ?? (await fundedUser({ [input.currency]: options.buyerBalance ?? 0n }));
  const seller = options.seller ?? (await createUser());
  const status = options.status ?? 'awaiting_funding';
  let escrow = await escrows.create(db, serviceCaller(buyer), { counterpartyIdentifier: seller.email as string, ...input } as CreateEscrowInput);
  if (status !== 'awaiting_funding') escrow = await escrows.act(db, serviceCaller(buyer), escrow.id, { action: 'fund' });
  if (status === 'delivered' || status === 'disputed') escrow = await escrows.act(db, serviceCaller(seller), escrow.id, { action: 'deliver' });
  if (status === 'disputed') escrow = await escrows.act(db, serviceCaller(buyer), escrow.id, { action: 'dispute', reason: 'Not as described' });
  return { id: escrow.id, escrow, buyer, seller };
}

/** The platform's escrow holding or fee balance in a currency: the sum over its shards. */
export async function platformBalance(knex: Knex, kind: 'escrow_holding' | 'fees', currency: string): Promise<bigint> {
  const row = await knex('ledger_accounts').where({ owner_type: 'platform', kind, currency }).first(knex.raw('coalesce(sum(balance_minor), 0)::text AS balance_minor'));
  return BigInt((row as { balance_minor: string }).balance_minor);
}

interface EscrowMoneyRow {
  id: string;
  status: string;
  amount_minor: string;
  fee_minor: string;
  buyer_fee_minor: string;
  seller_fee_minor: string;
  settled_to_seller_minor: string | null;
  settled_to_buyer_minor: string | null;
  settled_fee_minor: string | null;
  payout_recipient: 'seller' | 'buyer' | null;
}

/** The postings of an escrow: its funding, its settlement, and a split's share for the buyer paid once no longer held. */
const ESCROW_POSTING_KINDS = ['escrow.funding', 'escrow.settlement', 'escrow.buyer_share'];

/**
 * Checks, over every escrow of the database in `currency`, written independently of the
 * service: the holding account equals what is held for escrows in funded, delivered,
 * accepted or disputed (amount + buyer's fee share; a split's share for the buyer held: that
 * share alone, the seller and the fee paid); each escrow has exactly the postings its status
 * implies (a funding posting once funded, one settlement once released or refunded or its
 * buyer's share held, whose entries, with the share's once paid, match the recorded
 * settlement); a fee is charged only by a release and at most once (one settlement posting
 * per escrow).
 */
export async function expectEscrowMoneyConsistent(knex: Knex, currency: string): Promise<void> {
  // One snapshot: the checks compare rows of one moment, even while a test's own steps move escrow money.
  await knex.transaction((trx) => checkSnapshot(trx, currency), { isolationLevel: 'repeatable read', readOnly: true });
}

async function checkSnapshot(knex: Knex.Transaction, currency: string): Promise<void> {
  const escrows = (await knex('escrows').where({ currency })) as EscrowMoneyRow[];
  const postings = (await knex('postings as p')
    .join('entries as e', 'e.posting_id', 'p.id')
    .join('ledger_accounts as a', 'a.id', 'e.account_id')
    .whereIn('p.kind', ESCROW_POSTING_KINDS)
    .andWhere('e.currency', currency)
    .select('p.kind', 'p.reference', 'a.kind as account_kind', 'a.owner_id', 'e.amount_minor')) as Array<{
    kind: string;
    reference: string;
    account_kind: string;
    owner_id: string | null;
    amount_minor: string;
  }>;
  const byEscrow = new Map<string, typeof postings>();
  for (const entry of postings) byEscrow.set(entry.reference, [...(byEscrow.get(entry.reference) ?? []), entry]);

  let held = 0n;
  for (const escrow of escrows) {
    const entries = byEscrow.get(escrow.id) ?? [];
    const sum = (kind: string, accountKind: string) =>
      entries.filter((e) => e.kind === kind && e.account_kind === accountKind).reduce((total, e) => total + BigInt(e.amount_minor), 0n);
    const paidIn = BigInt(escrow.amount_minor) + BigInt(escrow.buyer_fee_minor);
    const paidOut = (accountKind: string) => sum('escrow.settlement', accountKind) + sum('escrow.buyer_share', accountKind);
    const funded = entries.some((e) => e.kind === 'escrow.funding');
    const settled = entries.some((e) => e.kind === 'escrow.settlement');
    const context = { escrow: escrow.id, status: escrow.status };
    // A split's share for the buyer held: the seller and the fee paid, the share still in the holding.
    const buyerShareHeld = escrow.status === 'accepted' && escrow.payout_recipient === 'buyer';
    expect({ ...context, funded }).toEqual({ ...context, funded: !['awaiting_funding', 'canceled'].includes(escrow.status) });
    expect({ ...context, settled }).toEqual({ ...context, settled: ['released', 'refunded'].includes(escrow.status) || buyerShareHeld });
    if (funded) expect({ ...context, holdingIn: sum('escrow.funding', 'escrow_holding') }).toEqual({ ...context, holdingIn: paidIn });
    if (buyerShareHeld) {
      const paid = BigInt(escrow.settled_to_seller_minor ?? -1) + BigInt(escrow.settled_fee_minor ?? -1);
      expect({ ...context, out: paidOut('escrow_holding'), toBuyer: escrow.settled_to_buyer_minor, shares: sum('escrow.buyer_share', 'wallet') }).toEqual({ ...context, out: -paid, toBuyer: null, shares: 0n });
      expect({ ...context, fee: sum('escrow.settlement', 'fees'), wallets: sum('escrow.settlement', 'wallet') }).toEqual({ ...context, fee: BigInt(escrow.settled_fee_minor ?? -1), wallets: BigInt(escrow.settled_to_seller_minor ?? -1) });
      held -= paid;
    } else if (settled) {
      const toSeller = BigInt(escrow.settled_to_seller_minor ?? -1);
      const toBuyer = BigInt(escrow.settled_to_buyer_minor ?? -1);
      const fee = BigInt(escrow.settled_fee_minor ?? -1);
      expect({ ...context, out: paidOut('escrow_holding') }).toEqual({ ...context, out: -paidIn });
      expect({ ...context, parts: toSeller + toBuyer + fee }).toEqual({ ...context, parts: paidIn });
      expect({ ...context, fee: paidOut('fees') }).toEqual({ ...context, fee });
      expect({ ...context, wallets: paidOut('wallet') }).toEqual({ ...context, wallets: toSeller + toBuyer });
      // A refund charges nothing; only a release to the seller charges the fee.
      if (escrow.status === 'refunded') expect({ ...context, toSeller, fee }).toEqual({ ...context, toSeller: 0n, fee: 0n });
      else expect({ ...context, feeBounded: fee <= BigInt(escrow.fee_minor) }).toEqual({ ...context, feeBounded: true });
    }
    if ((HELD_STATUSES as readonly string[]).includes(escrow.status)) held += paidIn;
  }
  const settlementsPerEscrow = new Map<string, number>();
  for (const row of (await knex('postings').whereIn('kind', ESCROW_POSTING_KINDS).select('kind', 'reference')) as Array<{ kind: string; reference: string }>) {
    const key = `${row.kind}:${row.reference}`;
    settlementsPerEscrow.set(key, (settlementsPerEscrow.get(key) ?? 0) + 1);
  }
  expect([...settlementsPerEscrow.values()].every((count) => count === 1)).toBe(true);
  expect(await platformHolding(knex, currency)).toBe(held);
}

function platformHolding(knex: Knex.Transaction, currency: string): Promise<bigint> {
  return platformBalance(knex, 'escrow_holding', currency);
}
