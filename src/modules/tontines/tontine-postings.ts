import { walletIdentity } from '../ledger';
import type { PlannedPosting } from '../writes';
import { drawBeneficiary } from './tontine-draw';
import type { Contribution, Cycle, Member, Tontine } from './tontine-rows';

/**
 * The postings of a contribution, from the tontine alone (pure): the member's wallet to the
 * pool, and, from the cycle's last unpaid contribution, the whole pot to the cycle's
 * beneficiary. The decision posts them (tontine-contributions.ts); a window of contributions
 * locks the accounts they name first (write_apply_batch).
 */

/** A tontine as its postings need it: the row, its members, its cycles and the open cycle's contributions. */
export interface TontineInLedger {
  tontine: Pick<Tontine, 'id' | 'currency' | 'contributionMinor' | 'poolAccountId' | 'currentCycle' | 'drawSeed'>;
  members: ReadonlyArray<Pick<Member, 'userId'>>;
  cycles: ReadonlyArray<Pick<Cycle, 'number' | 'beneficiaryUserId'>>;
  currentContributions: ReadonlyArray<Pick<Contribution, 'id' | 'userId' | 'status'>>;
}

/** Who receives the open cycle's pot, and the members it was drawn among when drawn now (a random tontine draws when the pot is complete). */
export interface Payout {
  beneficiaryUserId: string;
  drawnAmong?: string[];
}

const unpaid = (contribution: Pick<Contribution, 'status'>) => contribution.status === 'pending' || contribution.status === 'late';

/** The whole pot of a cycle: one contribution per cycle from each member (a tontine has as many cycles as members). */
export function potOf(locked: TontineInLedger): bigint {
  return locked.tontine.contributionMinor * BigInt(locked.cycles.length);
}

/** The open cycle's beneficiary: named at the start (join order), or drawn among the members who have not received a pot yet. */
export function payoutOf(locked: TontineInLedger): Payout {
  const { tontine } = locked;
  const current = locked.cycles.find((cycle) => cycle.number === tontine.currentCycle);
  if (!current) throw new Error(`tontine ${tontine.id} has no cycle ${tontine.currentCycle}`);
  if (current.beneficiaryUserId !== null) return { beneficiaryUserId: current.beneficiaryUserId };
  const received = new Set(locked.cycles.flatMap((cycle) => (cycle.beneficiaryUserId === null ? [] : [cycle.beneficiaryUserId])));
  const waiting = locked.members.map((member) => member.userId).filter((userId) => !received.has(userId));
  return { beneficiaryUserId: drawBeneficiary(tontine.drawSeed, tontine.currentCycle, waiting), drawnAmong: waiting };
}

/**
 * Whether `userId`'s contribution is the open cycle's last unpaid one, once the members of
 * `payingFirst` have paid theirs (contributions that may be applied before it).
 */
export function completesCycle(locked: TontineInLedger, userId: string, payingFirst: readonly string[] = []): boolean {
  const own = locked.currentContributions.find((contribution) => contribution.userId === userId);
  if (!own || !unpaid(own)) return false;
  return locked.currentContributions.every((contribution) => contribution === own || !unpaid(contribution) || payingFirst.includes(contribution.userId));
}

/** The member's wallet -> the pool: one contribution, referenced by its row. */
export function contributionPosting(locked: TontineInLedger, contribution: Pick<Contribution, 'id' | 'userId'>): PlannedPosting {
  const { tontine } = locked;
  return {
    kind: 'tontine.contribution',
    reference: contribution.id,
    metadata: { tontine_id: tontine.id, cycle: tontine.currentCycle, user_id: contribution.userId },
    entries: [
      { account: walletIdentity(contribution.userId, tontine.currency), amountMinor: -tontine.contributionMinor },
      { account: { id: tontine.poolAccountId }, amountMinor: tontine.contributionMinor },
    ],
  };
}

/** The pool -> the beneficiary's wallet: the open cycle's whole pot, once per cycle (its reference is the cycle). The pot is owed: a frozen wallet still receives it. */
export function payoutPosting(locked: TontineInLedger, beneficiaryUserId: string): PlannedPosting {
  const { tontine } = locked;
  const pot = potOf(locked);
  return {
    kind: 'tontine.payout',
    reference: `${tontine.id}:${tontine.currentCycle}`,
    metadata: { tontine_id: tontine.id, cycle: tontine.currentCycle, user_id: beneficiaryUserId },
    allowFrozen: true,
    entries: [
      { account: { id: tontine.poolAccountId }, amountMinor: -pot },
      { account: walletIdentity(beneficiaryUserId, tontine.currency), amountMinor: pot },
    ],
  };
}

/**
 * The postings of `userId`'s contribution to the open cycle: its own, then the payout when it
 * completes the cycle (`payingFirst`: see completesCycle). A member with no unpaid contribution
 * in the open cycle (paid already, not a member, no cycle running) posts nothing.
 */
export function postingPlan(locked: TontineInLedger, userId: string, payingFirst: readonly string[] = []): PlannedPosting[] {
  const own = locked.currentContributions.find((contribution) => contribution.userId === userId);
  if (!own || !unpaid(own)) return [];
  const contribution = contributionPosting(locked, own);
  return completesCycle(locked, userId, payingFirst) ? [contribution, payoutPosting(locked, payoutOf(locked).beneficiaryUserId)] : [contribution];
}
