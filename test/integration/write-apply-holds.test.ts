import crypto from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction';
import { walletIdentity } from '../../src/modules/ledger';
import { LimitsService } from '../../src/modules/limits';
import { applyPayoutDecision, decisionData, type Decision, type PlannedPosting } from '../../src/modules/writes';
import { testKnex } from '../support/database';
import { fundedUser } from '../support/factories';
import { expectLedgerInvariants } from '../support/ledger-invariants';
import { SHIPPED_LIMIT_POLICY } from '../support/limits';

/**
 * write_apply choosing, in one statement, the alternative of the payee whose limits ledger_post
 * refused (the shipped caps: tier_0 receives at most 100,000 XOF per transaction): one posting
 * pays two parties 150,000 each; each party's alternative pays the other alone, and holds both
 * when that one is refused too.
 */
const knex = testKnex();

beforeAll(async () => {
  await new LimitsService({ knex, policy: SHIPPED_LIMIT_POLICY }).install();
});

const SHARE = 150_000n;
const answer = (status: string): Decision['answer'] => ({ resource: { type: 'escrow', id: crypto.randomUUID(), status, location: '/api/escrows/test' } });

async function party(tier: 'tier_0' | 'tier_1', balance = 0n): Promise<string> {
  const user = await fundedUser(balance > 0n ? { XOF: balance } : {});
  await knex('users').where({ id: user.id }).update({ tier });
  return user.id;
}

async function balanceOf(userId: string): Promise<bigint> {
  const row = (await knex('ledger_accounts').where({ owner_type: 'user', owner_id: userId, currency: 'XOF', kind: 'wallet' }).first('balance_minor')) as { balance_minor: string } | undefined;
  return BigInt(row?.balance_minor ?? 0);
}

async function postingsOf(references: string[]): Promise<string[]> {
  return ((await knex('postings').whereIn('reference', references).orderBy('reference').select('reference')) as Array<{ reference: string }>).map((row) => row.reference);
}

/** A payer (tier_1, funded) paying `seller` and `buyer` in one posting, with one alternative per payee. */
function split(payer: string, seller: string, buyer: string) {
  const references = { both: crypto.randomUUID(), toSeller: crypto.randomUUID(), toBuyer: crypto.randomUUID() };
  const pays = (reference: string, credits: Array<[string, bigint]>): PlannedPosting => ({
    kind: 'test.split',
    reference,
    entries: [{ account: walletIdentity(payer, 'XOF'), amountMinor: -credits.reduce((sum, [, amount]) => sum + amount, 0n) }, ...credits.map(([owner, amountMinor]) => ({ account: walletIdentity(owner, 'XOF'), amountMinor }))],
  });
  const bothHeld: Decision = { answer: answer('both_held') };
  const sellerHeld: Decision = { postings: [pays(references.toBuyer, [[buyer, SHARE]])], answer: answer('seller_held'), holds: [{ posting: 0, ownerId: buyer, instead: bothHeld }] };
  const buyerHeld: Decision = { postings: [pays(references.toSeller, [[seller, SHARE]])], answer: answer('buyer_held'), holds: [{ posting: 0, ownerId: seller, instead: bothHeld }] };
  const decision: Decision = {
    postings: [pays(references.both, [[seller, SHARE], [buyer, SHARE]])],
    answer: answer('paid'),
    holds: [
      { posting: 0, ownerId: seller, instead: sellerHeld },
      { posting: 0, ownerId: buyer, instead: buyerHeld },
    ],
  };
  return { decision, sellerHeld, buyerHeld, bothHeld, references };
}

describe('write_apply with an alternative per payee', () => {
  it('applies the decision itself when every payee may receive', async () => {
    const [payer, seller, buyer] = [await party('tier_1', 1_000_000n), await party('tier_1'), await party('tier_1')];
    const { decision, references } = split(payer, seller, buyer);
    const applied = await withTransaction(knex, (trx) => applyPayoutDecision(trx, decision));
    expect(applied.applied).toBe(decision);
    expect(applied).toMatchObject({ held: false, postingIds: [expect.any(String)] });
    expect([await balanceOf(seller), await balanceOf(buyer)]).toEqual([SHARE, SHARE]);
    expect(await postingsOf(Object.values(references))).toEqual([references.both]);
  });

  it.each([
    ['buyer', 'tier_1', 'tier_0', 'buyerHeld', [SHARE, 0n]],
    ['seller', 'tier_0', 'tier_1', 'sellerHeld', [0n, SHARE]],
  ] as const)("applies the %s's alternative when only the %s's limits refuse: the other paid alone, in the same statement", async (_who, sellerTier, buyerTier, chosen, balances) => {
    const [payer, seller, buyer] = [await party('tier_1', 1_000_000n), await party(sellerTier), await party(buyerTier)];
    const decided = split(payer, seller, buyer);
    const applied = await withTransaction(knex, (trx) => applyPayoutDecision(trx, decided.decision));
    expect(applied.applied).toBe(decided[chosen]);
    expect(applied).toMatchObject({ held: true, postingIds: [expect.any(String)] });
    expect([await balanceOf(seller), await balanceOf(buyer)]).toEqual(balances);
    const paid = chosen === 'buyerHeld' ? decided.references.toSeller : decided.references.toBuyer;
    expect(await postingsOf(Object.values(decided.references))).toEqual([paid]);
    expect(await balanceOf(payer)).toBe(1_000_000n - SHARE);
  });

  it("applies the alternative's own when both payees' limits refuse: nothing paid, whichever was refused first", async () => {
    const [payer, seller, buyer] = [await party('tier_1', 1_000_000n), await party('tier_0'), await party('tier_0')];
    const decided = split(payer, seller, buyer);
    const applied = await withTransaction(knex, (trx) => applyPayoutDecision(trx, decided.decision));
    expect(applied).toEqual({ held: true, postingIds: [], applied: decided.bothHeld });
    expect([await balanceOf(seller), await balanceOf(buyer), await balanceOf(payer)]).toEqual([0n, 0n, 1_000_000n]);
    expect(await postingsOf(Object.values(decided.references))).toEqual([]);
    await expectLedgerInvariants(knex);
  });

  it("throws any other refusal (the payer's short funds), writing nothing", async () => {
    const [payer, seller, buyer] = [await party('tier_1', 1_000n), await party('tier_0'), await party('tier_1')];
    const decided = split(payer, seller, buyer);
    const error = await withTransaction(knex, (trx) => applyPayoutDecision(trx, decided.decision)).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'InsufficientFunds' });
    expect(await postingsOf(Object.values(decided.references))).toEqual([]);
  });

  it('reads a single `hold` object (the form before `holds`) as a list of one, and answers the owner whose refusal chose it', async () => {
    const [payer, seller, buyer] = [await party('tier_1', 1_000_000n), await party('tier_1'), await party('tier_0')];
    const { decision, references } = split(payer, seller, buyer);
    const { holds, ...data } = decisionData(decision, () => null) as { holds: Array<Record<string, unknown>> } & Record<string, unknown>;
    const legacy = { ...data, hold: { ...holds[1], instead: { ...(holds[1]?.instead as object), holds: undefined } } };
    const result = (await withTransaction(knex, (trx) => trx.raw('SELECT to_json(write_apply(?::jsonb)) AS answer', [JSON.stringify(legacy)]))) as { rows: [{ answer: Array<string | null> }] };
    expect(result.rows[0].answer).toEqual([expect.any(String), null, buyer]);
    expect(await postingsOf(Object.values(references))).toEqual([references.toSeller]);
  });
});
