import { describe, expect, it } from 'vitest';
import { walletIdentity } from '../../src/modules/ledger';
import { appliedDecision, decisionData, writeApplyAnswer, type Decision, type PlannedPosting } from '../../src/modules/writes';

/**
 * A decision's alternatives per payee (pure): what write_apply receives, and which decision its
 * answer says it applied.
 */
const PAYER = '00000000-0000-4000-8000-0000000000a1';
const SELLER = '00000000-0000-4000-8000-0000000000a2';
const BUYER = '00000000-0000-4000-8000-0000000000a3';
const POSTING_1 = '00000000-0000-4000-8000-0000000000b1';
const POSTING_2 = '00000000-0000-4000-8000-0000000000b2';

const answer = (status: string): Decision['answer'] => ({ resource: { type: 'escrow', id: PAYER, status, location: `/api/escrows/${PAYER}` } });
const pays = (reference: string, credits: Array<[string, bigint]>): PlannedPosting => ({
  kind: 'test.payout',
  reference,
  entries: [{ account: walletIdentity(PAYER, 'XOF'), amountMinor: -credits.reduce((sum, [, amount]) => sum + amount, 0n) }, ...credits.map(([owner, amountMinor]) => ({ account: walletIdentity(owner, 'XOF'), amountMinor }))],
});

/** Both paid in one posting; each party's alternative pays the other alone, whose own alternative holds both. */
function splitDecision(): { decision: Decision; sellerHeld: Decision; buyerHeld: Decision; bothHeld: Decision } {
  const bothHeld: Decision = { answer: answer('both_held') };
  const sellerHeld: Decision = { postings: [pays('r', [[BUYER, 60n]])], answer: answer('seller_held'), holds: [{ posting: 0, ownerId: BUYER, instead: bothHeld }] };
  const buyerHeld: Decision = { postings: [pays('r', [[SELLER, 40n]])], answer: answer('buyer_held'), holds: [{ posting: 0, ownerId: SELLER, instead: bothHeld }] };
  const decision: Decision = {
    postings: [pays('r', [[SELLER, 40n], [BUYER, 60n]])],
    answer: answer('paid'),
    holds: [
      { posting: 0, ownerId: SELLER, instead: sellerHeld },
      { posting: 0, ownerId: BUYER, instead: buyerHeld },
    ],
  };
  return { decision, sellerHeld, buyerHeld, bothHeld };
}

describe("write_apply's answer", () => {
  it('is the postings of the decision applied, then (when an alternative was) NULL and the owners whose refusals chose one', () => {
    expect(writeApplyAnswer([POSTING_1, POSTING_2])).toEqual({ postingIds: [POSTING_1, POSTING_2], heldFor: [] });
    expect(writeApplyAnswer([POSTING_1, null, BUYER])).toEqual({ postingIds: [POSTING_1], heldFor: [BUYER] });
    expect(writeApplyAnswer([null, BUYER, SELLER])).toEqual({ postingIds: [], heldFor: [BUYER, SELLER] });
    expect(writeApplyAnswer([])).toEqual({ postingIds: [], heldFor: [] });
  });

  it("names the alternative of the owner refused, in turn: the decision, one party's, or both's whichever was refused first", () => {
    const { decision, sellerHeld, buyerHeld, bothHeld } = splitDecision();
    expect(appliedDecision(decision, [])).toBe(decision);
    expect(appliedDecision(decision, [SELLER])).toBe(sellerHeld);
    expect(appliedDecision(decision, [BUYER])).toBe(buyerHeld);
    expect(appliedDecision(decision, [BUYER, SELLER])).toBe(bothHeld);
    expect(appliedDecision(decision, [SELLER, BUYER])).toBe(bothHeld);
    expect(() => appliedDecision(decision, [PAYER])).toThrow(/names no alternative/);
    expect(() => appliedDecision(decision, [SELLER, SELLER])).toThrow(/names no alternative/);
  });
});

describe('a decision with alternatives per payee, as write_apply reads it', () => {
  it('carries each alternative (and theirs) with its owner and posting, each with its own completion of the key', () => {
    const { decision } = splitDecision();
    const data = decisionData(decision, (decided) => ({ id: PAYER, claimToken: PAYER, responseStatus: decided.answer.resource.status === 'paid' ? 200 : 202 }));
    const holds = data.holds as Array<{ posting: number; owner_id: string; instead: Record<string, unknown> }>;
    expect(holds.map((hold) => [hold.posting, hold.owner_id, (hold.instead.key as { resource_status: string }).resource_status])).toEqual([
      [0, SELLER, 'seller_held'],
      [0, BUYER, 'buyer_held'],
    ]);
    const nested = holds[1]?.instead.holds as Array<{ owner_id: string; instead: { key: { resource_status: string; response_status: number }; postings: unknown[] } }>;
    expect(nested.map((hold) => [hold.owner_id, hold.instead.key.resource_status, hold.instead.key.response_status, hold.instead.postings])).toEqual([[SELLER, 'both_held', 202, []]]);
    expect(decisionData({ answer: answer('paid') }, () => null).holds).toBeUndefined();
  });

  it('refuses two alternatives for one payee, one at a posting the decision does not make, and one that does not post first the postings before it', () => {
    const { decision, sellerHeld } = splitDecision();
    const refusedBy = (holds: Decision['holds']) => () => decisionData({ ...decision, holds }, () => null);
    expect(refusedBy([...(decision.holds ?? []), { posting: 0, ownerId: SELLER, instead: sellerHeld }])).toThrow(/one alternative per payee/);
    expect(refusedBy([{ posting: 1, ownerId: SELLER, instead: sellerHeld }])).toThrow(/not one of the decision's 1/);
    const first = pays('first', [[SELLER, 1n]]);
    const twoPostings = { ...decision, postings: [first, ...(decision.postings ?? [])] };
    const apply = (instead: Decision) => () => decisionData({ ...twoPostings, holds: [{ posting: 1, ownerId: BUYER, instead }] }, () => null);
    expect(apply({ answer: answer('held') })).toThrow(/posts first the decision's 1 postings/);
    expect(apply({ postings: [pays('other', [[SELLER, 1n]])], answer: answer('held') })).toThrow(/posts first the decision's 1 postings/);
    expect(apply({ postings: [first], answer: answer('held') })).not.toThrow();
    // An alternative's own alternatives are checked the same way.
    expect(refusedBy([{ posting: 0, ownerId: SELLER, instead: { ...sellerHeld, holds: [{ posting: 3, ownerId: BUYER, instead: sellerHeld }] } }])).toThrow(/not one of the decision's 1/);
  });
});
