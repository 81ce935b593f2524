import type { Knex } from 'knex';
import type { Caller } from '../../contract';
import { ForbiddenError } from '../../errors';
import { currencies, walletIdentity, walletRefusal, type WalletPosting } from '../ledger';
import { retryHeldPayout, settleHeldPayout, type HeldPayout } from '../held-payouts';
import { applyPayoutDecision, type Decision, type DecidedEvent, type PlannedPosting } from '../writes';
import { TontineNotFoundError } from './tontine-errors';
import { TontineRepository } from './tontine-repository';
import { describeState } from './tontine-state';
import type { Tontine, TontineState } from './tontine-rows';

/**
 * A tontine cycle's pot held for verification (see tontine-contributions.ts, where it is held):
 * completed by the job once its beneficiary's limits allow it (the pool -> the beneficiary,
 * `tontine.payout_made`), or returned by an administrator who is not a member to the members
 * who paid it (the pool -> each payer, their contribution, `tontine.contribution_refunded`).
 * Each is one decision on the one write path, under the tontine's lock.
 */

const PAYOUT_PARTIES: WalletPosting = { parties: new Map(), defaultParty: 'recipient', covers: 'this payout' };

type Locked = { tontine: Tontine; state: TontineState };

async function lockHeld(trx: Knex.Transaction, held: HeldPayout, userId: string): Promise<Locked> {
  const locked = await new TontineRepository(trx).lockForDecision(held.subjectId, userId);
  const cycle = locked?.state.cycles.find((c) => c.number === held.cycleNumber);
  if (!locked || cycle?.payout?.id !== held.id) throw new TontineNotFoundError();
  return locked;
}

function event(locked: Locked, object: unknown, type: string, payload: Record<string, unknown>, at: Date, actorUserId: string | null, postingIds?: Record<string, number>): DecidedEvent {
  return { subjectType: 'tontine', subjectId: locked.tontine.id, type, actorUserId, payload, occurredAt: at, object, previousStatus: locked.tontine.status, ...(postingIds ? { postingIds } : {}) };
}

const answer = (tontine: Tontine): Decision['answer'] => ({ resource: { type: 'tontine', id: tontine.id, status: tontine.status, location: `/api/tontines/${tontine.id}` } });

/** The job: the held pot paid to its beneficiary, or one more attempt noted when their limits still refuse it. Whether it completed. */
export async function completeHeldPot(trx: Knex.Transaction, held: HeldPayout, at: Date): Promise<boolean> {
  const locked = await lockHeld(trx, held, held.recipientUserId);
  const { tontine } = locked;
  const cycle = held.cycleNumber as number;
  const { exponent } = await currencies.require(trx, tontine.currency);
  const { object } = describeState(tontine, locked.state, held.recipientUserId, exponent);
  const posting: PlannedPosting = {
    kind: 'tontine.payout',
    reference: `${tontine.id}:${cycle}`,
    metadata: { tontine_id: tontine.id, cycle, user_id: held.recipientUserId, held_payout_id: held.id },
    allowFrozen: true,
    entries: [
      { account: { id: tontine.poolAccountId }, amountMinor: -held.amountMinor },
      { account: walletIdentity(held.recipientUserId, tontine.currency), amountMinor: held.amountMinor },
    ],
  };
  const applied = await applyPayoutDecision(trx, {
    postings: [posting],
    changes: [
      settleHeldPayout(held, { status: 'completed' }, at, 0).change,
      { table: 'tontine_cycles', key: { tontine_id: tontine.id, number: cycle }, expect: { status: 'paid_out' }, set: { paid_out_at: at.toISOString() }, postingIds: { payout_posting_id: 0 } },
    ],
    events: [event(locked, object, 'tontine.payout_made', { cycle, beneficiary_user_id: held.recipientUserId, amount_minor: held.amountMinor.toString(), held_payout_id: held.id }, at, null, { posting_id: 0 })],
    answer: answer(tontine),
    holds: [{ posting: 0, ownerId: held.recipientUserId, instead: { changes: [retryHeldPayout(held, at)], answer: answer(tontine) } }],
  }).catch((error: unknown) => {
    throw walletRefusal(error, PAYOUT_PARTIES);
  });
  return !applied.held;
}

/** An administrator who is not a member returns the held pot: each payer of the cycle gets their contribution back. */
export async function returnHeldPot(
  trx: Knex.Transaction,
  caller: Pick<Caller, 'userId' | 'isAdmin'>,
  first: HeldPayout,
  reason: string,
  current: () => Promise<HeldPayout>,
  at: Date,
): Promise<void> {
  const locked = await lockHeld(trx, first, caller.userId);
  if (locked.state.members.some((member) => member.userId === caller.userId)) {
    throw new ForbiddenError('ConflictOfInterest', 'You are a member of this tontine: you cannot return its held payout. Another platform administrator must.');
  }
  const held = await current();
  const { tontine } = locked;
  const cycle = held.cycleNumber as number;
  const payers = ((await trx('tontine_contributions').where({ tontine_id: tontine.id, cycle_number: cycle, status: 'paid' }).orderBy('user_id').select('user_id')) as Array<{ user_id: string }>).map((row) => row.user_id);
  if (tontine.contributionMinor * BigInt(payers.length) !== held.amountMinor) throw new Error(`the held pot of cycle ${cycle} of tontine ${tontine.id} is not what its payers paid`);
  const { exponent } = await currencies.require(trx, tontine.currency);
  const { object } = describeState(tontine, locked.state, caller.userId, exponent, 'administrator');
  const posting: PlannedPosting = {
    kind: 'tontine.payout_return',
    reference: `${tontine.id}:${cycle}`,
    metadata: { tontine_id: tontine.id, cycle, held_payout_id: held.id },
    allowFrozen: true,
    entries: [{ account: { id: tontine.poolAccountId }, amountMinor: -held.amountMinor }, ...payers.map((userId) => ({ account: walletIdentity(userId, tontine.currency), amountMinor: tontine.contributionMinor }))],
  };
  const refunded = (userId: string) =>
    event(locked, object, 'tontine.contribution_refunded', { cycle, user_id: userId, amount_minor: tontine.contributionMinor.toString(), held_payout_id: held.id, reason }, at, caller.userId, { posting_id: 0 });
  await applyPayoutDecision(trx, {
    postings: [posting],
    changes: [settleHeldPayout(held, { status: 'returned', byUserId: caller.userId, reason }, at, 0).change],
    events: payers.map(refunded),
    answer: answer(tontine),
  });
}
